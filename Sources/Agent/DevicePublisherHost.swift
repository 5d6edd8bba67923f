import EmpaLink
import Spool

/// What a ``DevicePublisher`` needs from the agent that owns it, and nothing more: the agent (``AgentRuntime``)
/// conforms; a test can stand in for it. Loop thread only; the hot path calls ``enabledStreams``,
/// ``flushEveryNotification`` and ``armFlush()``, which must not allocate.
protocol DevicePublisherHost: AnyObject {
    /// The streams to publish (`publish.streams`).
    var enabledStreams: Set<StreamKind> { get }
    /// Whether each notification is published at once (batch interval 0).
    var flushEveryNotification: Bool { get }
    /// Whether the `bvp` stream carries the decoded BVP instead of the artefact-reduced one (`publish.bvp`).
    var publishesRawBVP: Bool { get }
    /// A batch received data: make sure the batch timer runs.
    func armFlush()
    /// A battery reading arrived: the wristband's retained status may say something new.
    func batteryChanged(_ device: EmpaticaDeviceManager)
    /// The wristband's connection changed.
    func deviceStatusChanged(_ device: EmpaticaDeviceManager)
    /// The device's self-description (Device Information, body sensor location) was read.
    func deviceInformationChanged(_ device: EmpaticaDeviceManager)
}

extension DevicePublisherHost {
    func deviceInformationChanged(_ device: EmpaticaDeviceManager) {}
    var publishesRawBVP: Bool { false }
}

/// Where a ``DevicePublisher`` hands its formatted messages: the ``Outbox``.
protocol MessageSink: AnyObject {
    /// The spool key of a device's stream (`nil` without a spool).
    func key(serial: String, stream: StreamKind) -> SpoolStreamKey?
    /// Publishes (or spools) `payload`'s bytes on `topic`; both are borrowed for the call. Hot path: no allocation.
    func publish(topic: UnsafePointer<CChar>, key: SpoolStreamKey?, payload: JSONBuffer)
}

extension Outbox: MessageSink {}

extension AgentRuntime: DevicePublisherHost {
    func batteryChanged(_ device: EmpaticaDeviceManager) {
        self.publishDeviceStatus(device)
    }

    func deviceInformationChanged(_ device: EmpaticaDeviceManager) {
        self.publishDeviceStatus(device)
        self.publishDevices()
    }
}
