/// A wristband's connection lifecycle as a pure state machine: events in, actions out.
///
/// ``EmpaticaDeviceManager`` owns one, feeds it what happened (the application's requests, BlueZ's replies and
/// signals, timers, the profile's progress) and executes the actions it returns: the BlueZ calls, timers, status
/// reports and counters. Nothing here touches the bus, a timer or a delegate, so every transition — the race
/// cases included — is tested without either (`ConnectionLifecycleTests`).
///
/// Each event comes with a ``LinkView``: what BlueZ's object cache says of the device at that moment. Which
/// actions an event yields depends only on the state and that view.
///
/// The manager runs the machine to completion: an event raised while the actions of another are being executed
/// (a delegate that calls `connect` from `didUpdateDeviceStatus`, a profile check answering at once) is handled
/// after them, so the actions of one transition are never interleaved with another's.
struct ConnectionLifecycle: Sendable, Equatable {
    /// What BlueZ's object cache says of the device when an event is handled.
    struct LinkView: Sendable, Equatable {
        /// `org.bluez` has an owner and its objects are known.
        var bluezAvailable = true
        /// BlueZ exports an object for the device.
        var exported = true
        /// The device's `Connected` property.
        var connected = false
        /// The device's `ServicesResolved` property.
        var servicesResolved = false

        init(bluezAvailable: Bool = true, exported: Bool = true, connected: Bool = false,
             servicesResolved: Bool = false) {
            self.bluezAvailable = bluezAvailable
            self.exported = exported
            self.connected = connected
            self.servicesResolved = servicesResolved
        }
    }

    /// BlueZ's answer to `Connect`.
    enum ConnectReply: Sendable, Equatable {
        case success
        /// `org.bluez.Error.InProgress`: BlueZ is already connecting the device.
        case inProgress
        case failure(EmpaLinkError)
    }

    /// Which `Disconnect` a reply answers: the application's, or the release of a failed attempt's link.
    enum DisconnectPurpose: Sendable, Equatable {
        case requested
        case release
    }

    /// What the device profile found among the GATT objects exported so far
    /// (see ``Action/checkProfile(attempt:final:)``).
    enum ProfileCheck: Sendable, Equatable {
        /// Every characteristic of the profile is there.
        case complete
        /// Only optional characteristics are missing (`missing` says which, for the log).
        case missingOptional(String)
        /// A required characteristic is missing; `reason` is the failure an attempt reports if it never comes.
        case missingRequired(missing: String, reason: String)
    }

    enum Timer: Sendable, Equatable, CaseIterable {
        /// The attempt's deadline (the connect timeout).
        case deadline
        /// A second without new GATT objects while only optional characteristics are missing.
        case profileSettle
        /// After bluetoothd answered `Disconnect` for a link it held, the wait for `Connected = false`.
        case linkDown
        /// The backoff before the next attempt.
        case reconnect
    }

    enum Event: Sendable, Equatable {
        /// ``EmpaticaDeviceManager/connect(delegate:options:)``, after its authentication checks.
        case connectRequested(autoReconnect: Bool)
        /// ``EmpaticaDeviceManager/disconnect()``.
        case disconnectRequested
        case connectReplied(attempt: UInt64, ConnectReply)
        case disconnectReplied(DisconnectPurpose, succeeded: Bool)
        /// The device's properties changed; `connectedBecameFalse` when `Connected` is among them and now false.
        case propertiesChanged(connectedBecameFalse: Bool)
        /// GATT objects appeared under the device, or the device object itself appeared again.
        case objectsChanged
        /// The device's object or BlueZ itself went away.
        case deviceGone
        /// BlueZ (re)appeared; whether it exports the device.
        case bluezAvailable(devicePresent: Bool)
        /// BlueZ reported the device again (discovery): it is present.
        case deviceSeen
        case timerFired(Timer)
        /// The answer to ``Action/checkProfile(attempt:final:)``.
        case profileChecked(attempt: UInt64, ProfileCheck, final: Bool)
        /// Every stream of this attempt is subscribed.
        case streamsSubscribed(attempt: UInt64)
        /// The start command was written: the session is up.
        case sessionStarted(attempt: UInt64)
        /// A step of this attempt failed (a subscription, the start command, a notification socket's watch).
        case stepFailed(attempt: UInt64, EmpaLinkError)
        /// A notification socket hung up (BlueZ closes every one when the link drops).
        case streamClosed
    }

    enum Action: Sendable, Equatable {
        /// Tell the delegate the new ``DeviceStatus``.
        case report(DeviceStatus)
        /// Count an attempt and call `Connect`.
        case connect(attempt: UInt64)
        case disconnect(DisconnectPurpose)
        /// Look at the GATT objects exported so far and answer with ``Event/profileChecked(attempt:_:final:)``;
        /// `final` when the attempt goes on with what is there (or fails) rather than wait for more.
        case checkProfile(attempt: UInt64, final: Bool)
        /// Subscribe to every stream the profile offers, then raise ``Event/streamsSubscribed(attempt:)``.
        case subscribe(attempt: UInt64)
        /// Write the profile's session start, then raise ``Event/sessionStarted(attempt:)``.
        case startSession(attempt: UInt64)
        /// The session is up: note when, clear the last error, reset the decoders, read the battery.
        case sessionUp
        /// Close the notification streams; `stopNotify` also ends StartNotify subscriptions on the bus.
        case closeStreams(stopNotify: Bool)
        case arm(Timer)
        /// Arm ``Timer/reconnect`` with the backoff for this many consecutive failures.
        case armReconnect(failures: Int)
        case cancel(Timer)
        /// Record the attempt's failure (last error, counter).
        case attemptFailed(EmpaLinkError)
        /// Count a link lost after it was up.
        case linkLost
        /// The connection is over: forget when it came up.
        case connectionEnded
        /// Let discovery follow (it runs only while a wanted wristband is not connected).
        case reconcileDiscovery
    }

    /// The public status, as last reported.
    private(set) var status = DeviceStatus.disconnected
    private(set) var phase = ConnectionPhase.idle
    /// `connect` was called and `disconnect` was not.
    private(set) var wantsConnection = false
    private(set) var autoReconnect = true
    /// Whether BlueZ currently has an object for this device.
    private(set) var present = true
    /// This attempt's `Connect` succeeded: BlueZ holds a link for us even if it never signalled `Connected`. A
    /// property of the link rather than a step: it holds from `Connect`'s answer through every later step.
    private(set) var linkRequested = false
    /// Whether the link the application's `Disconnect` ends was held (its `Connected = false` is still to come).
    private(set) var disconnectHeldLink = false
    private(set) var attempt: UInt64 = 0
    /// Consecutive failures, for the backoff.
    private(set) var failures = 0
    /// Whether the attempt's deadline, once reached while the profile is incomplete, goes on with what is there.
    private(set) var deadlineIsFirst = true
    /// The timers armed and not yet fired or cancelled.
    private(set) var armed: [Timer] = []
    /// The device, for messages (its serial number).
    let label: String

    init(label: String) {
        self.label = label
    }

    /// Whether `attempt` is the attempt under way (a reply or step of an older one is stale).
    func isCurrent(_ attempt: UInt64) -> Bool {
        self.attempt == attempt && self.status == .connecting
    }

    /// Handles one event and returns the actions to execute, in order.
    mutating func handle(_ event: Event, link: LinkView) -> [Action] {
        var out: [Action] = []
        self.handle(event, link: link, into: &out)
        return out
    }

    private mutating func handle(_ event: Event, link: LinkView, into out: inout [Action]) {
        switch event {
        case .connectRequested(let autoReconnect):
            self.autoReconnect = autoReconnect
            guard !self.wantsConnection else { return }
            self.wantsConnection = true
            self.failures = 0
            self.startAttempt(link, &out)

        case .disconnectRequested:
            self.disconnect(link, &out)

        case .connectReplied(let attempt, let reply):
            guard self.isCurrent(attempt) else { return }
            switch reply {
            case .success:
                self.linkRequested = true
                // Not `link.connected`: bluetoothd 5.66 may never signal it (see `propertiesChanged`).
                guard link.exported else { return }
                if link.servicesResolved {
                    out.append(.checkProfile(attempt: self.attempt, final: false))
                } else {
                    self.phase = .resolvingServices
                }
            case .inProgress:
                // Another client, or our earlier attempt: wait for ServicesResolved under the same deadline.
                self.phase = .resolvingServices
            case .failure(let error):
                self.attemptFailed(error, link, &out)
            }

        case .disconnectReplied(.requested, let succeeded):
            guard self.status == .disconnecting else { return }
            if succeeded, self.disconnectHeldLink, link.exported {
                // bluetoothd answers before it signals `Connected = false`: wait for the signal, or a while.
                self.arm(.linkDown, &out)
            } else {
                self.finishDisconnect(link, &out)
            }

        case .disconnectReplied(.release, let succeeded):
            guard case .releasing(let retry, let linkDown) = self.phase else { return }
            if succeeded, !linkDown, link.exported {
                self.arm(.linkDown, &out)
                self.phase = .awaitingLinkDown(retry: retry)
            } else {
                self.endRelease(link, &out)
            }

        case .propertiesChanged(let connectedBecameFalse):
            guard link.exported else { return }
            if connectedBecameFalse {
                switch (self.status, self.phase) {
                case (.disconnecting, _):
                    self.finishDisconnect(link, &out)
                case (.disconnected, .releasing(let retry, _)):
                    self.phase = .releasing(retry: retry, linkDown: true)
                case (.disconnected, .awaitingLinkDown):
                    self.endRelease(link, &out)
                default:
                    self.linkLost(link, &out)
                }
                return
            }
            // Not `link.connected`: bluetoothd 5.66 never signals `Connected = true` for an LE link it opened when
            // the ATT channel came up before the kernel's "device connected" event (seen with real bluetoothd, see
            // Docs/simulator.md), while `ServicesResolved = true` only ever happens on a live link.
            if self.phase == .resolvingServices, self.status == .connecting, link.servicesResolved {
                out.append(.checkProfile(attempt: self.attempt, final: false))
            }

        case .objectsChanged:
            switch self.status {
            case .disconnected:
                self.startAttempt(link, &out)
            case .connecting where self.phase.isAwaitingProfile:
                out.append(.checkProfile(attempt: self.attempt, final: false))
            default:
                break
            }

        case .deviceGone:
            self.present = false
            // No link is left: ours to finish disconnecting, or lost.
            if self.status == .disconnecting {
                self.finishDisconnect(link, &out)
            } else {
                self.linkLost(link, &out)
            }

        case .bluezAvailable(let devicePresent):
            self.present = devicePresent
            self.startAttempt(link, &out)

        case .deviceSeen:
            self.present = true

        case .timerFired(let timer):
            guard let index = self.armed.firstIndex(of: timer) else { return }  // cancelled meanwhile
            self.armed.remove(at: index)
            self.timerFired(timer, link, &out)

        case .profileChecked(let attempt, let check, let final):
            guard self.isCurrent(attempt), self.phase == .resolvingServices || self.phase == .linking
                    || self.phase.isAwaitingProfile else { return }
            self.profileChecked(check, final: final, link, &out)

        case .streamsSubscribed(let attempt):
            guard self.isCurrent(attempt), self.phase == .subscribing else { return }
            out.append(.startSession(attempt: attempt))

        case .sessionStarted(let attempt):
            guard self.isCurrent(attempt), self.phase == .subscribing else { return }
            self.cancelAll(&out)
            self.phase = .idle
            self.failures = 0
            out.append(.sessionUp)
            self.report(.connected, &out)
            out.append(.reconcileDiscovery)

        case .stepFailed(let attempt, let error):
            guard self.isCurrent(attempt) else { return }
            self.attemptFailed(error, link, &out)

        case .streamClosed:
            self.linkLost(link, &out)
        }
    }

    // MARK: Transitions

    private mutating func startAttempt(_ link: LinkView, _ out: inout [Action]) {
        guard self.wantsConnection, self.status == .disconnected, !self.armed.contains(.reconnect) else { return }
        if self.phase.releaseRetry != nil {
            // A failed attempt's link is still being released: the attempt starts once it is down.
            self.phase.retryAfterRelease()
            return
        }
        // Otherwise wait for BlueZ or for the device to be discovered again (`bluezAvailable`, `objectsChanged`).
        guard link.bluezAvailable, self.present, link.exported else { return }
        self.attempt &+= 1
        self.phase = .linking
        self.linkRequested = false
        self.report(.connecting, &out)
        self.deadlineIsFirst = true
        self.arm(.deadline, &out)
        out.append(.connect(attempt: self.attempt))
    }

    private mutating func profileChecked(_ check: ProfileCheck, final: Bool, _ link: LinkView,
                                         _ out: inout [Action]) {
        switch check {
        case .missingOptional(let missing) where !final:
            self.phase = .awaitingProfile(missing: missing)
            // Go on once no new object has come for a second.
            self.cancel(.profileSettle, &out)
            self.arm(.profileSettle, &out)
        case .missingRequired(let missing, _) where !final:
            // bluetoothd 5.66 may signal `ServicesResolved` before its last `InterfacesAdded`: wait for the rest
            // until the deadline.
            self.phase = .awaitingProfile(missing: missing)
        case .complete, .missingOptional:
            self.cancel(.profileSettle, &out)
            self.phase = .subscribing
            out.append(.subscribe(attempt: self.attempt))
        case .missingRequired(_, let reason):
            self.cancel(.profileSettle, &out)
            self.phase = .subscribing
            self.attemptFailed(.profileMismatch(reason), link, &out)
        }
    }

    private mutating func timerFired(_ timer: Timer, _ link: LinkView, _ out: inout [Action]) {
        switch timer {
        case .deadline:
            guard self.status == .connecting else { return }
            if self.deadlineIsFirst, self.phase.isAwaitingProfile {
                // Services resolved but part of the profile never appeared: go on with what is there, or fail when
                // a required characteristic is missing, under a second deadline of the same length.
                self.deadlineIsFirst = false
                self.arm(.deadline, &out)
                out.append(.checkProfile(attempt: self.attempt, final: true))
            } else {
                self.attemptFailed(.timedOut("connecting to \(self.label)"), link, &out)
            }
        case .profileSettle:
            guard self.status == .connecting, self.phase.isAwaitingProfile else { return }
            out.append(.checkProfile(attempt: self.attempt, final: true))
        case .linkDown:
            // `Connected = false` did not come: the link is taken for down.
            if self.status == .disconnecting {
                self.finishDisconnect(link, &out)
            } else {
                self.endRelease(link, &out)
            }
        case .reconnect:
            self.startAttempt(link, &out)
        }
    }

    /// The application's `disconnect()`. The device is `.disconnecting` until the link is down: bluetoothd answers
    /// `Disconnect` before it signals `Connected = false`, and an attempt started in between would find the old link
    /// still up and be ended by that late signal.
    private mutating func disconnect(_ link: LinkView, _ out: inout [Action]) {
        self.wantsConnection = false
        guard self.status != .disconnected else {
            // No reconnect either. A failed attempt's release goes on and then finds no connection wanted.
            self.cancel(.reconnect, &out)
            return
        }
        self.cancelAll(&out)
        // Whether BlueZ holds a link whose `Connected = false` is still to come (bluetoothd 5.66 may not have
        // signalled `Connected = true` for it: see ``linkRequested``).
        self.disconnectHeldLink = self.status == .connected || self.linkRequested || link.connected
            || link.servicesResolved
        self.phase = .idle
        self.report(.disconnecting, &out)
        out.append(.closeStreams(stopNotify: true))
        out.append(.disconnect(.requested))
    }

    /// Our `disconnect()` is done: the link is down, or the `Disconnect` left nothing to wait for. A `connect` made
    /// meanwhile (a reload that removed and re-added the serial) found the device disconnecting; it starts now.
    private mutating func finishDisconnect(_ link: LinkView, _ out: inout [Action]) {
        self.cancel(.linkDown, &out)
        out.append(.connectionEnded)
        self.report(.disconnected, &out)
        out.append(.reconcileDiscovery)
        self.startAttempt(link, &out)
    }

    private mutating func attemptFailed(_ error: EmpaLinkError, _ link: LinkView, _ out: inout [Action]) {
        out.append(.attemptFailed(error))
        self.failures += 1
        self.cancelAll(&out)
        out.append(.closeStreams(stopNotify: self.status != .disconnected))
        self.phase = .idle
        out.append(.connectionEnded)
        // Leave BlueZ in a clean state: an attempt that timed out may still be connecting, and one that failed after
        // `Connect` succeeded holds a link whose `Connected = true` bluetoothd may never have signalled. The next
        // attempt waits for that `Disconnect` to finish: a `Connect` before it would find the old link still up and
        // reuse it, and its late `Connected = false` would end the new attempt.
        if link.connected || link.servicesResolved || self.linkRequested || error.isTimeout {
            self.linkRequested = false
            self.phase = .releasing(retry: false, linkDown: false)
            self.report(.disconnected, &out)
            out.append(.disconnect(.release))
            return
        }
        self.report(.disconnected, &out)
        self.scheduleReconnect(&out)
    }

    /// A failed attempt's link is down (or given up on): the attempt asked for meanwhile starts, or the backoff runs.
    private mutating func endRelease(_ link: LinkView, _ out: inout [Action]) {
        guard let retry = self.phase.releaseRetry else { return }
        self.cancel(.linkDown, &out)
        self.phase = .idle
        guard self.status == .disconnected, !self.armed.contains(.reconnect) else { return }
        if retry {
            self.startAttempt(link, &out)
        } else {
            self.scheduleReconnect(&out)
        }
    }

    /// The link went down after it was up (`Connected = false`, a notification socket hung up, the object vanished).
    private mutating func linkLost(_ link: LinkView, _ out: inout [Action]) {
        guard self.status == .connected || self.status == .connecting else { return }
        if self.status == .connected { out.append(.linkLost) }
        self.cancelAll(&out)
        out.append(.closeStreams(stopNotify: true))
        self.phase = .idle
        out.append(.connectionEnded)
        self.report(.disconnected, &out)
        self.failures = 0
        self.scheduleReconnect(&out)
        out.append(.reconcileDiscovery)
    }

    private mutating func scheduleReconnect(_ out: inout [Action]) {
        guard self.wantsConnection, self.autoReconnect else {
            self.wantsConnection = false
            return
        }
        self.armed.append(.reconnect)
        out.append(.armReconnect(failures: self.failures))
    }

    // MARK: Helpers

    private mutating func report(_ status: DeviceStatus, _ out: inout [Action]) {
        guard status != self.status else { return }
        self.status = status
        out.append(.report(status))
    }

    private mutating func arm(_ timer: Timer, _ out: inout [Action]) {
        self.cancel(timer, &out)
        self.armed.append(timer)
        out.append(.arm(timer))
    }

    private mutating func cancel(_ timer: Timer, _ out: inout [Action]) {
        guard let index = self.armed.firstIndex(of: timer) else { return }
        self.armed.remove(at: index)
        out.append(.cancel(timer))
    }

    private mutating func cancelAll(_ out: inout [Action]) {
        for timer in Timer.allCases { self.cancel(timer, &out) }
    }
}
