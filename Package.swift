// swift-tools-version:6.2
//
// EmpaLink Edge — a headless BLE wristband agent for Linux (see Docs/ and SPEC).
//
// Module seams (SPEC §2): C libraries sit behind one system-library target each; `CLinux` holds the few Linux
// syscalls Glibc does not export; pure modules (`Bluetooth`, `Config`, `E4`, `Physio`) import no C and do no I/O;
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
        .executable(name: "empalink-sim", targets: ["empalink-sim"]),
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
        // BlueZ client: object cache, discovery, devices, GATT, notification streams.
        // Identifiers are parsed once, here at the D-Bus boundary (SPEC §15).
        .target(name: "BlueZ", dependencies: ["Bluetooth", "DBus", "EventLoop", "Posix"], swiftSettings: strict),
        // The EmpaLink SDK's API on Linux (SPEC §7): authentication, discovery, devices, streams; the device-profile
        // seam (SPEC §15) with the E4 as its first profile.
        .target(name: "EmpaLink", dependencies: ["Bluetooth", "BlueZ", "E4", "Physio", "Config", "EventLoop", "Posix"],
                swiftSettings: strict),
        .target(name: "Logging", dependencies: ["CSystemd", "Posix"], swiftSettings: strict),
        // libmosquitto on the event loop: connect, TLS, will, QoS, acknowledgements.
        .target(
            name: "MQTT", dependencies: ["CMosquitto", "EventLoop", "Posix", "Logging"], swiftSettings: strict
        ),
        // Pure: TOML parser and the typed agent configuration. No C, no I/O.
        .target(name: "Config", swiftSettings: strict),
        // Pure: Bluetooth identifiers — UUIDs (16/32/128-bit on the SIG base) and device addresses (SPEC §15). No C,
        // no Foundation, no I/O.
        .target(name: "Bluetooth", swiftSettings: strict),
        // Pure: the E4 GATT profile, packet decoders and encoders, capture format (SPEC §6). No C, no I/O.
        .target(name: "E4", dependencies: ["Bluetooth"], swiftSettings: strict),
        // Pure: streaming signal processing (IBI / HR engine). No C, no Foundation, no I/O.
        .target(name: "Physio", swiftSettings: strict),
        // Pure: fleet coordination (SPEC §18) — the retained-topic payloads and the lease state machine. No C, no
        // Foundation, no I/O; the agent wires it to MQTT and BlueZ.
        .target(name: "Fleet", swiftSettings: strict),

        // The crash-safe disk spool with its own writer thread (SPEC §11).
        .target(
            name: "Spool", dependencies: ["CZlib", "CLinux", "Posix", "EventLoop"], swiftSettings: strict
        ),

        // The daemon's library (command line today; the forwarder arrives with later issues).
        .target(name: "Agent", dependencies: ["Config", "Posix", "EventLoop", "Logging", "CLinux", "CSystemd", "DBus",
                                              "E4", "EmpaLink", "Fleet", "MQTT", "Physio", "Spool"], swiftSettings: strict),
        // The consumer core (SPEC §17): subscription to `P/+/+/#`, payload reader, de-duplication, reordering, gaps;
        // and the tools built on it: the E4 streaming-server endpoint, the E4 connect recorder, the live watch.
        .target(name: "Consumer", dependencies: ["Agent", "MQTT", "Config", "EventLoop", "Logging", "Posix", "CZlib"],
                swiftSettings: strict),
        // The operator tool's subcommands.
        .target(name: "CtlCommands", dependencies: ["Bluetooth", "Config", "Physio", "Posix", "EmpaLink", "E4", "BlueZ",
                                                   "DBus", "EventLoop", "Agent", "CCrypto", "Spool", "Consumer",
                                                   "Logging", "MQTT"], swiftSettings: strict),

        // A BlueZ-compatible D-Bus service with simulated wristbands (SPEC §13).
        .target(name: "Simulator", dependencies: ["Bluetooth", "DBus", "E4", "Config", "EventLoop", "Logging", "Posix"],
                swiftSettings: strict),
        .executableTarget(name: "empalink-sim", dependencies: ["Simulator"], swiftSettings: strict),

        .executableTarget(name: "empalinkd", dependencies: ["Agent"], swiftSettings: strict),
        // An app that uses only the public EmpaLink API (SPEC §7's runnable example).
        .executableTarget(name: "empalink-example", dependencies: ["EmpaLink", "EventLoop"],
                          swiftSettings: strict),
        .executableTarget(name: "empalinkctl", dependencies: ["CtlCommands"], swiftSettings: strict),
        // Allocation counting (SPEC §8, §14): malloc & co. overridden by `CAllocationCounter`, which must never be
        // linked into the test bundle (it would replace every suite's allocator), hence its own executable.
        .target(name: "CAllocationCounter"),
        .executableTarget(name: "empalink-alloc-check",
                          dependencies: ["CAllocationCounter", "Bluetooth", "E4", "EmpaLink", "BlueZ", "EventLoop",
                                         "Posix", "MQTT", "Logging", "Spool", "Config", "Agent", "Physio"],
                          swiftSettings: strict),
        // Coverage-guided fuzz targets (issue #21, Fuzz/README.md): one executable, one target per parser. A normal
        // build makes it a replayer of saved inputs; `make fuzz` builds it with libFuzzer and ASan (-DFUZZING), where
        // SwiftPM compiles it as a library and libFuzzer's `main` runs.
        .executableTarget(name: "empalink-fuzz",
                          dependencies: ["Agent", "BlueZ", "Bluetooth", "CDBus", "Config", "Consumer", "DBus",
                                         "CZlib", "E4", "EmpaLink", "Posix", "Spool"],
                          swiftSettings: strict),
        .executableTarget(name: "empalink-bench",
                          dependencies: ["EventLoop", "Posix", "Spool", "E4", "EmpaLink", "Agent"],
                          swiftSettings: strict),

        .testTarget(name: "BluetoothTests", dependencies: ["Bluetooth", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "BlueZTests", dependencies: ["Bluetooth", "BlueZ", "DBus", "EventLoop", "Posix"],
                    swiftSettings: strict),
        .testTarget(name: "EmpaLinkTests", dependencies: ["Bluetooth", "EmpaLink", "Config", "BlueZ", "DBus",
                                                          "EventLoop", "E4", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "ConfigTests", dependencies: ["Config", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "E4Tests", dependencies: ["Bluetooth", "E4", "TestSupport"], swiftSettings: strict),
        // The fleet core without a broker: codecs, coordinator rules, and a multi-board harness over a fake broker.
        .testTarget(name: "FleetTests", dependencies: ["Fleet"], swiftSettings: strict),
        .testTarget(name: "PhysioTests", dependencies: ["Physio", "CtlCommands", "TestSupport"], swiftSettings: strict),
        // Test helpers shared by the test targets: a private dbus-daemon, the simulator process.
        .target(name: "TestSupport", dependencies: ["DBus", "EventLoop"], path: "Tests/Support", swiftSettings: strict),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "EventLoop", "Posix", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "SimulatorTests", dependencies: ["Bluetooth", "Simulator", "DBus", "E4", "EmpaLink",
                                                          "EventLoop", "Posix",
                                                          "TestSupport"],
                    swiftSettings: strict),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "Posix", "Logging", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "LoggingTests", dependencies: ["Logging", "Posix"], swiftSettings: strict),
        .testTarget(name: "MQTTTests", dependencies: ["MQTT", "EventLoop", "Posix", "Logging", "TestSupport"],
                    swiftSettings: strict),
        .testTarget(name: "ConsumerTests", dependencies: ["Consumer", "CtlCommands"], swiftSettings: strict),
        // The agent in-process: outbox, JSON writer, command parser, publisher, reload, option translation.
        .testTarget(name: "AgentTests", dependencies: ["Agent", "Config", "EmpaLink", "EventLoop", "Logging", "MQTT",
                                                       "Posix", "Spool", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "SpoolTests", dependencies: ["Spool", "EventLoop", "Posix", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "PosixTests", dependencies: ["Posix"], swiftSettings: strict),
        // Runs `empalink-alloc-check` as a child process; deliberately no dependency on it or on the counter.
        .testTarget(name: "AllocationTests", swiftSettings: strict),
    ]
)
