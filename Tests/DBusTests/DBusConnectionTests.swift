#if canImport(Glibc)
import Glibc
#endif
import Posix
import Testing

@testable import DBus
import TestSupport
import EventLoop

/// The D-Bus layer against a real private `dbus-daemon`: two connections, one exporting, one calling.
@Suite(.serialized) struct DBusConnectionTests {
    static let service = "org.empalink.Test"
    static let interface = "org.empalink.Test1"

    /// Every value shape BlueZ uses.
    static let samples: [DBusValue] = [
        .byte(0xA5), .boolean(true), .int16(-12345), .uint16(0x3EA1), .int32(-70), .uint32(4_000_000_000),
        .int64(-1 << 40), .uint64(1 << 63), .double(36.6), .string("Empatica E4 ✓"),
        .objectPath("/org/bluez/hci0/dev_00_07_80_9F_F1_67"), .signature("a{sv}"),
        .bytes([0x01, 0x00, 0xFF, 0x7F]), .bytes([]), .strings(["notify", "read"]), .strings([]),
        .properties([("Transport", .string("le")), ("RSSI", .int16(-80)), ("UUIDs", .strings([]))]),
        .dictionary(key: "q", value: "v", [.init(.uint16(0x0006), .variant(.bytes([1, 2, 3])))]),
        .dictionary(key: "o", value: "a{sa{sv}}", [
            .init(.objectPath("/org/bluez/hci0"), .dictionary(key: "s", value: "a{sv}", [
                .init(.string("org.bluez.Adapter1"), .properties([("Powered", .boolean(true))])),
            ])),
        ]),
        .structure([.int32(7), .string("x"), .bytes([9])]),
        .variant(.variant(.uint32(3))),
        .array(element: "(ay)", [.structure([.bytes([1])]), .structure([.bytes([])])]),
    ]

    func makeEcho(_ server: DBusConnection) throws {
        try server.objects.export("/echo", interfaces: [
            DBusInterface(name: Self.interface, methods: [
                DBusMethod("Echo", in: "v", out: "v") { call in call.reply(call.arguments) },
                DBusMethod("Fail", in: "s") { call in
                    call.fail(DBusError(name: "org.bluez.Error.InProgress", message: call.arguments[0].string ?? ""))
                },
                DBusMethod("Never") { call in
                    // Keep the call unanswered past the caller's timeout, then let it go.
                    _ = try? server.loop.scheduleTimer(after: .seconds(2)) { withExtendedLifetime(call) {} }
                },
            ]),
        ])
    }

    @Test func everyBlueZValueShapeRoundTrips() throws {
        let bus = try TestBus()
        let loop = try EventLoop()
        let server = try DBusConnection.connect(address: bus.address, loop: loop)
        let client = try DBusConnection.connect(address: bus.address, loop: loop)
        try self.makeEcho(server)
        var received: [DBusValue] = []
        var failures: [DBusError] = []
        let countdown = Countdown(Self.samples.count, loop: loop)
        for sample in Self.samples {
            client.call(destination: server.uniqueName, path: "/echo", interface: Self.interface, member: "Echo",
                        arguments: [.variant(sample)]) { result in
                switch result {
                case .success(let values): received.append(values.first?.unwrapped ?? .string("missing"))
                case .failure(let error): failures.append(error)
                }
                countdown.tick()
            }
        }
        try loop.runForTest()
        #expect(failures.isEmpty)
        // The echo unwraps one variant level, so compare against each sample with its outer variants removed.
        #expect(received == Self.samples.map(\.unwrapped))
        client.close()
        server.close()
        loop.close()
    }

    @Test func unixFileDescriptorsPassBothWays() throws {
        let bus = try TestBus()
        let loop = try EventLoop()
        let server = try DBusConnection.connect(address: bus.address, loop: loop)
        let client = try DBusConnection.connect(address: bus.address, loop: loop)
        try self.makeEcho(server)
        var fds: [CInt] = [0, 0]
        #expect(pipe(&fds) == 0)
        var echoed: Int32 = -1
        client.call(destination: server.uniqueName, path: "/echo", interface: Self.interface, member: "Echo",
                    arguments: [.variant(.unixFD(fds[1]))]) { result in
            if case .success(let values) = result, case .unixFD(let fd)? = values.first?.unwrapped {
                echoed = fd
            }
            loop.stop()
        }
        try loop.runForTest()
        // The echoed descriptor is a new descriptor for the same pipe: what we write to it comes out of fds[0].
        #expect(echoed >= 0 && echoed != fds[1])
        let message = Array("through the bus".utf8)
        #expect(message.withUnsafeBytes { write(echoed, $0.baseAddress, $0.count) } == message.count)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
        #expect(Array(buffer.prefix(max(count, 0))) == message)
        close(echoed)
        close(fds[0])
        close(fds[1])
        client.close()
        server.close()
        loop.close()
    }

    @Test func errorNamesTimeoutsAndMisuseArePreserved() throws {
        let bus = try TestBus()
        let loop = try EventLoop()
        let server = try DBusConnection.connect(address: bus.address, loop: loop)
        let client = try DBusConnection.connect(address: bus.address, loop: loop)
        try self.makeEcho(server)
        var errors: [String: DBusError] = [:]
        let countdown = Countdown(4, loop: loop)
        func record(_ key: String) -> (Result<[DBusValue], DBusError>) -> Void {
            { result in
                if case .failure(let error) = result { errors[key] = error }
                countdown.tick()
            }
        }
        client.call(destination: server.uniqueName, path: "/echo", interface: Self.interface, member: "Fail",
                    arguments: [.string("busy")], reply: record("fail"))
        client.call(destination: server.uniqueName, path: "/echo", interface: Self.interface, member: "Never",
                    timeout: .milliseconds(200), reply: record("timeout"))
        client.call(destination: server.uniqueName, path: "/echo", interface: Self.interface, member: "Nope",
                    reply: record("unknown"))
        client.call(destination: server.uniqueName, path: "/echo", interface: Self.interface, member: "Echo",
                    arguments: [.string("not a variant")], reply: record("signature"))
        try loop.runForTest()
        #expect(errors["fail"] == DBusError(name: "org.bluez.Error.InProgress", message: "busy"))
        #expect(errors["timeout"]?.name == DBusError.noReplyName)
        #expect(errors["unknown"]?.name == DBusError.unknownMethodName)
        #expect(errors["signature"]?.name == DBusError.invalidArgsName)
        client.close()
        server.close()
        loop.close()
    }

    @Test func invalidArgumentsAreRejectedBeforeLibdbusSeesThem() throws {
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "not/a/path", interface: nil, member: "X")
        }
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: "org.bluez", path: "/", interface: "nodots", member: "X")
        }
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: "org.bluez", path: "/", interface: nil, member: "1bad")
        }
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "/", interface: nil, member: "X",
                                       arguments: [.string("nul\u{0}inside")])
        }
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "/", interface: nil, member: "X",
                                       arguments: [.objectPath("/trailing/")])
        }
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "/", interface: nil, member: "X",
                                       arguments: [.array(element: "s", [.int32(1)])])
        }
        #expect(throws: DBusError.self) {
            try DBusMessage.methodCall(destination: nil, path: "/", interface: nil, member: "X",
                                       arguments: [.dictionary(key: "v", value: "s", [])])
        }
        // A valid message is still fine after the failures.
        let message = try DBusMessage.methodCall(destination: "org.bluez", path: "/org/bluez", interface: nil,
                                                 member: "X", arguments: [.string("ok")])
        #expect(try message.arguments() == [.string("ok")])
    }

    @Test func signalsReachOnlyMatchingSubscriptions() throws {
        let bus = try TestBus()
        let loop = try EventLoop()
        let emitter = try DBusConnection.connect(address: bus.address, loop: loop)
        let listener = try DBusConnection.connect(address: bus.address, loop: loop)
        var underHci0: [String] = []
        var tagged: [String] = []
        try listener.subscribe(DBusMatchRule(sender: emitter.uniqueName, interface: Self.interface,
                                             pathNamespace: "/org/bluez/hci0")) { message in
            underHci0.append(message.path ?? "")
            if message.member == "Done" { loop.stop() }
        }
        try listener.subscribe(DBusMatchRule(interface: Self.interface, member: "Tag", arg0: "yes")) { message in
            tagged.append(message.path ?? "")
        }
        // Let the AddMatch calls reach the bus before emitting.
        _ = try loop.scheduleTimer(after: .milliseconds(100)) {
            for path in ["/org/bluez/hci0/dev_1", "/org/bluez/hci1/dev_2", "/org/bluez/hci0"] {
                try? emitter.emitSignal(path: path, interface: Self.interface, member: "Tag",
                                        arguments: [.string(path.hasSuffix("2") ? "yes" : "no")])
            }
            try? emitter.emitSignal(path: "/org/bluez/hci0", interface: "org.empalink.Other1", member: "Tag",
                                    arguments: [.string("yes")])
            try? emitter.emitSignal(path: "/org/bluez/hci0/dev_3", interface: Self.interface, member: "Done",
                                    arguments: [])
        }
        try loop.runForTest()
        #expect(underHci0 == ["/org/bluez/hci0/dev_1", "/org/bluez/hci0", "/org/bluez/hci0/dev_3"])
        #expect(tagged == ["/org/bluez/hci1/dev_2"])
        emitter.close()
        listener.close()
        loop.close()
    }

    @Test func propertiesAndObjectManagerBehaveLikeBlueZ() throws {
        let bus = try TestBus()
        let loop = try EventLoop()
        let server = try DBusConnection.connect(address: bus.address, loop: loop)
        let client = try DBusConnection.connect(address: bus.address, loop: loop)
        try server.objects.addObjectManager(at: "/")
        var setValues: [DBusValue] = []
        try server.objects.export("/org/bluez/hci0", interfaces: [
            DBusInterface(name: "org.bluez.Adapter1", properties: [
                ("Address", DBusProperty(.string("00:00:00:00:00:01"))),
                ("Powered", DBusProperty(.boolean(true)) { value in
                    setValues.append(value)
                    return nil
                }),
                ("Discovering", DBusProperty(.boolean(false))),
            ]),
        ])
        var changes: [[String: DBusValue]] = []
        var added: [String] = []
        var removed: [(String, [DBusValue])] = []
        try client.subscribe(DBusMatchRule(sender: server.uniqueName, interface: "org.freedesktop.DBus.Properties",
                                           member: "PropertiesChanged")) { message in
            if let args = try? message.arguments(), args.count == 3 { changes.append(args[1].stringKeyed ?? [:]) }
        }
        try client.subscribe(DBusMatchRule(sender: server.uniqueName,
                                           interface: "org.freedesktop.DBus.ObjectManager")) { message in
            guard let args = try? message.arguments(), let path = args.first?.string else { return }
            if message.member == "InterfacesAdded" { added.append(path) }
            if message.member == "InterfacesRemoved" { removed.append((path, args[1].arrayElements ?? [])) }
        }
        var managed: DBusValue?
        var getAll: [String: DBusValue]?
        var readOnlyError: DBusError?
        var getPowered: DBusValue?
        let props = "org.freedesktop.DBus.Properties"
        _ = try loop.scheduleTimer(after: .milliseconds(100)) {
            client.call(destination: server.uniqueName, path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                        member: "GetManagedObjects") { result in managed = (try? result.get())?.first }
            client.call(destination: server.uniqueName, path: "/org/bluez/hci0", interface: props, member: "GetAll",
                        arguments: [.string("org.bluez.Adapter1")]) { result in
                getAll = (try? result.get())?.first?.stringKeyed
            }
            client.call(destination: server.uniqueName, path: "/org/bluez/hci0", interface: props, member: "Set",
                        arguments: [.string("org.bluez.Adapter1"), .string("Address"), .variant(.string("x"))]) {
                result in
                if case .failure(let error) = result { readOnlyError = error }
            }
            client.call(destination: server.uniqueName, path: "/org/bluez/hci0", interface: props, member: "Set",
                        arguments: [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.boolean(false))]) {
                _ in
                client.call(destination: server.uniqueName, path: "/org/bluez/hci0", interface: props, member: "Get",
                            arguments: [.string("org.bluez.Adapter1"), .string("Powered")]) { result in
                    getPowered = (try? result.get())?.first?.unwrapped
                    try? server.objects.export("/org/bluez/hci0/dev_00_07_80_9F_F1_67", interfaces: [
                        DBusInterface(name: "org.bluez.Device1", properties: [("RSSI", DBusProperty(.int16(-60)))]),
                    ])
                    server.objects.unexport("/org/bluez/hci0/dev_00_07_80_9F_F1_67")
                    _ = try? loop.scheduleTimer(after: .milliseconds(200)) { loop.stop() }
                }
            }
        }
        try loop.runForTest()
        #expect(getAll?["Address"] == .variant(.string("00:00:00:00:00:01")))
        #expect(getAll?.count == 3)
        #expect(readOnlyError?.name == DBusError.propertyReadOnlyName)
        #expect(setValues == [.boolean(false)])
        #expect(getPowered == .boolean(false))
        #expect(changes.first?["Powered"] == .variant(.boolean(false)))
        // The adapter's own InterfacesAdded may or may not beat the client's AddMatch to the bus; the device's
        // comes after the match is certainly in place.
        #expect(added.last == "/org/bluez/hci0/dev_00_07_80_9F_F1_67")
        #expect(removed.first?.0 == "/org/bluez/hci0/dev_00_07_80_9F_F1_67")
        #expect(removed.first?.1 == [.string("org.bluez.Device1")])
        let objects = managed?.stringKeyed
        let adapter = objects?["/org/bluez/hci0"]?.stringDictionary?.map(\.0)
        #expect(adapter == ["org.freedesktop.DBus.Introspectable", "org.bluez.Adapter1",
                            "org.freedesktop.DBus.Properties"])
        client.close()
        server.close()
        loop.close()
    }

    @Test func nameOwnerChangesAreFollowed() throws {
        let bus = try TestBus()
        let loop = try EventLoop()
        let service = try DBusConnection.connect(address: bus.address, loop: loop)
        let client = try DBusConnection.connect(address: bus.address, loop: loop)
        var owners: [String?] = []
        try client.watchNameOwner(Self.service) { owner in
            owners.append(owner)
            if owners.count == 1 {
                #expect((try? service.requestName(Self.service)) == true)
            } else if owners.count == 2 {
                try? service.releaseName(Self.service)
            } else {
                loop.stop()
            }
        }
        // Nobody owns the name at first: the first report is the owner once we request it.
        _ = try loop.scheduleTimer(after: .milliseconds(100)) {
            if owners.isEmpty { owners.append(nil); #expect((try? service.requestName(Self.service)) == true) }
        }
        try loop.runForTest()
        #expect(owners == [nil, service.uniqueName, nil])
        client.close()
        service.close()
        loop.close()
    }

    @Test func losingTheBusFailsPendingCallsAndReportsDisconnect() throws {
        let bus = try TestBus()
        let loop = try EventLoop()
        let server = try DBusConnection.connect(address: bus.address, loop: loop)
        let client = try DBusConnection.connect(address: bus.address, loop: loop)
        try self.makeEcho(server)
        var disconnected = false
        var pendingError: DBusError?
        client.onDisconnect = { disconnected = true }
        client.call(destination: server.uniqueName, path: "/echo", interface: Self.interface, member: "Never",
                    timeout: .seconds(10)) { result in
            if case .failure(let error) = result { pendingError = error }
            loop.stop()
        }
        _ = try loop.scheduleTimer(after: .milliseconds(200)) { bus.stop() }
        try loop.runForTest()
        #expect(disconnected)
        #expect(pendingError != nil)
        #expect(!client.isConnected)
        var afterwards: DBusError?
        client.call(destination: "org.bluez", path: "/", interface: Self.interface, member: "X") { result in
            if case .failure(let error) = result { afterwards = error }
            loop.stop()
        }
        try loop.runForTest()
        #expect(afterwards != nil)
        client.close()
        server.close()
        loop.close()
    }
}
