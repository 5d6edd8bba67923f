// swift-tools-version:6.0
//
// EmpaLink Edge — a headless BLE wristband agent for Linux (see Docs/ and SPEC).
//
// Module seams (SPEC §2): C libraries sit behind one system-library target each; `CLinux` holds the few Linux
// syscalls Glibc does not export; pure modules (`Config`, and later `E4`, `Physio`) import no C and do no I/O;
// executables are thin `main`s over library targets so that everything is testable in-process.

import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "EmpaLinkEdge",
    products: [
        .executable(name: "empalinkd", targets: ["empalinkd"]),
        .executable(name: "empalinkctl", targets: ["empalinkctl"]),
        .executable(name: "empalink-bench", targets: ["empalink-bench"]),
    ],
    targets: [
        // C libraries from Debian, one module map each.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // epoll, eventfd, timerfd, signalfd and wrappers for variadic calls.
        .target(name: "CLinux"),

        // Thin, typed wrappers over POSIX: file descriptors, errno, files.
        .target(name: "Posix", dependencies: ["CLinux"], swiftSettings: strict),
        .target(name: "EventLoop", dependencies: ["CLinux", "Posix"], swiftSettings: strict),
        // Safe Swift over libdbus, driven by the event loop.
        .target(name: "DBus", dependencies: ["CDBus", "EventLoop", "Posix"], swiftSettings: strict),
        .target(name: "Logging", dependencies: ["CSystemd", "Posix"], swiftSettings: strict),
        // Pure: TOML parser and the typed agent configuration. No C, no I/O.
        .target(name: "Config", swiftSettings: strict),
        // Pure: the E4 GATT profile, packet decoders and encoders, capture format (SPEC §6). No C, no I/O.
        .target(name: "E4", swiftSettings: strict),
        // Pure: streaming signal processing (IBI / HR engine). No C, no Foundation, no I/O.
        .target(name: "Physio", swiftSettings: strict),

        // The crash-safe disk spool with its own writer thread (SPEC §11).
        .target(
            name: "Spool", dependencies: ["CZlib", "CLinux", "Posix", "EventLoop", "Config"], swiftSettings: strict
        ),

        // The daemon's library (command line today; the forwarder arrives with later issues).
        .target(name: "Agent", dependencies: ["Config", "Posix", "EventLoop", "Logging"], swiftSettings: strict),
        // The operator tool's subcommands.
        .target(name: "EmpaLinkCtl", dependencies: ["Config", "Physio", "Posix", "Spool"], swiftSettings: strict),

        .executableTarget(name: "empalinkd", dependencies: ["Agent"], swiftSettings: strict),
        .executableTarget(name: "empalinkctl", dependencies: ["EmpaLinkCtl"], swiftSettings: strict),
        .executableTarget(name: "empalink-bench", dependencies: ["EventLoop", "Posix", "Spool"], swiftSettings: strict),

        .testTarget(name: "ConfigTests", dependencies: ["Config"], swiftSettings: strict),
        .testTarget(name: "E4Tests", dependencies: ["E4"], swiftSettings: strict),
        .testTarget(name: "PhysioTests", dependencies: ["Physio", "EmpaLinkCtl"], swiftSettings: strict),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "EventLoop", "Posix"], swiftSettings: strict),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "Posix", "Logging"], swiftSettings: strict),
        .testTarget(name: "LoggingTests", dependencies: ["Logging", "Posix"], swiftSettings: strict),
        .testTarget(name: "SpoolTests", dependencies: ["Spool", "EventLoop", "Posix"], swiftSettings: strict),
        .testTarget(name: "PosixTests", dependencies: ["Posix"], swiftSettings: strict),
    ]
)
