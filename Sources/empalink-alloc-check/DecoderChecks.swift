import E4

/// The E4 codecs (SPEC §6): every decoder's success and error paths (typed throws), and every encoder.
///
/// Inputs are built before counting; each iteration decodes from an `UnsafeRawBufferPointer` (what the live
/// path hands over) or a `RawSpan`, and folds the result into a checksum so nothing is optimised away.
enum DecoderChecks {
    static func run(iterations: Int) -> [AllocationMeasurement] {
        var results: [AllocationMeasurement] = []
        results += Self.bvp(iterations: iterations)
        results += Self.acc(iterations: iterations)
        results += Self.gsr(iterations: iterations)
        results += Self.temperature(iterations: iterations)
        results += Self.events(iterations: iterations)
        results += Self.encoders(iterations: iterations)
        return results
    }

    /// 64 consecutive packets (one full turn of the 6-bit counter) of `encode(counter)`.
    static func packets(_ encode: (Int, inout E4PacketBytes) -> Void) -> [E4PacketBytes] {
        (0..<64).map { counter in
            var packet = E4PacketBytes()
            encode(counter, &packet)
            return packet
        }
    }

    /// A packet of `count` bytes, all `byte`.
    static func filled(_ count: Int, _ byte: UInt8) -> E4PacketBytes {
        E4PacketBytes(repeatElement(byte, count: count))
    }

    static func bvp(iterations: Int) -> [AllocationMeasurement] {
        let stream = Self.packets { counter, packet in
            var green = InlineArray<11, Int>(repeating: (counter % 5) - 2)
            var red = InlineArray<11, Int>(repeating: 1)
            E4BVP.encode(green: &green, red: &red, counter: UInt8(counter), into: &packet)
        }
        let short = Self.filled(19, 0)
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        var index = 0
        var checksum = 0.0
        var results: [AllocationMeasurement] = []
        results.append(.measure("e4.bvp.decode", iterations: iterations) {
            stream[index & 63].withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                    checksum += Double(packet.value[10])
                } catch {
                    checksum -= 1
                }
            }
            index &+= 1
        })
        results.append(.measure("e4.bvp.decode.span", iterations: iterations) {
            stream[index & 63].withBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                    checksum += Double(packet.value[10])
                } catch {
                    checksum -= 1
                }
            }
            index &+= 1
        })
        results.append(.measure("e4.bvp.error.wrongLength", iterations: iterations) {
            short.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                } catch {
                    if case .wrongLength(_, let actual) = error { checksum += Double(actual) }
                }
            }
        })
        // After the last accepted packet, the same packet again is a duplicate every time.
        let last = stream[(index &- 1) & 63]
        results.append(.measure("e4.bvp.error.duplicate", iterations: iterations) {
            last.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                } catch {
                    if case .duplicate(let counter) = error { checksum += Double(counter) }
                }
            }
        })
        Self.keep(checksum, decoder.statistics.packets)
        return results
    }

    static func acc(iterations: Int) -> [AllocationMeasurement] {
        let stream = Self.packets { counter, packet in
            let axis = InlineArray<6, Int8>(repeating: Int8(counter % 64))
            E4ACC.encode(x: axis, y: axis, z: axis, counter: UInt16(counter), into: &packet)
        }
        let short = Self.filled(21, 0)
        var decoder = E4ACCDecoder()
        var packet = E4ACCPacket()
        var index = 0
        var checksum = 0
        var results: [AllocationMeasurement] = []
        results.append(.measure("e4.acc.decode", iterations: iterations) {
            stream[index & 63].withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                    checksum &+= Int(packet.z[5])
                } catch {
                    checksum &-= 1
                }
            }
            index &+= 1
        })
        results.append(.measure("e4.acc.error.wrongLength", iterations: iterations) {
            short.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                } catch {
                    if case .wrongLength(_, let actual) = error { checksum &+= actual }
                }
            }
        })
        let last = stream[(index &- 1) & 63]
        results.append(.measure("e4.acc.error.duplicate", iterations: iterations) {
            last.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                } catch {
                    if case .duplicate(let counter) = error { checksum &+= Int(counter) }
                }
            }
        })
        Self.keep(Double(checksum), decoder.statistics.packets)
        return results
    }

    static func gsr(iterations: Int) -> [AllocationMeasurement] {
        let stream = Self.packets { counter, packet in
            var codes = InlineArray<6, UInt32>(repeating: UInt32(200_000 + counter))
            E4GSR.encode(codes: &codes, counter: UInt16(counter), into: &packet)
        }
        let short = Self.filled(0, 0)
        var decoder = E4GSRDecoder()
        var packet = E4GSRPacket()
        var index = 0
        var checksum: Float = 0
        var results: [AllocationMeasurement] = []
        results.append(.measure("e4.gsr.decode", iterations: iterations) {
            stream[index & 63].withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                    checksum += packet.microsiemens[0]
                } catch {
                    checksum -= 1
                }
            }
            index &+= 1
        })
        results.append(.measure("e4.gsr.error.wrongLength", iterations: iterations) {
            short.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                } catch {
                    if case .wrongLength(let expected, _) = error { checksum += Float(expected) }
                }
            }
        })
        let last = stream[(index &- 1) & 63]
        results.append(.measure("e4.gsr.error.duplicate", iterations: iterations) {
            last.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                } catch {
                    if case .duplicate(let counter) = error { checksum += Float(counter) }
                }
            }
        })
        Self.keep(Double(checksum), decoder.statistics.packets)
        return results
    }

    static func temperature(iterations: Int) -> [AllocationMeasurement] {
        let stream = Self.packets { counter, packet in
            let raw = InlineArray<8, UInt16>(repeating: E4Temperature.raw(celsius: 33 + Double(counter) / 64))
            E4Temperature.encode(raw: raw, counter: UInt32(counter), into: &packet)
        }
        let short = Self.filled(16, 0)
        // Raw 0 is −273.15 °C: outside the sensor's range.
        var invalid = E4PacketBytes()
        E4Temperature.encode(raw: InlineArray(repeating: 0), counter: 1, into: &invalid)
        var decoder = E4TemperatureDecoder()
        var packet = E4TemperaturePacket()
        var index = 0
        var checksum: Float = 0
        var results: [AllocationMeasurement] = []
        results.append(.measure("e4.temp.decode", iterations: iterations) {
            stream[index & 63].withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                    checksum += packet.celsius[7]
                } catch {
                    checksum -= 1
                }
            }
            index &+= 1
        })
        results.append(.measure("e4.temp.error.wrongLength", iterations: iterations) {
            short.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                } catch {
                    if case .wrongLength(_, let actual) = error { checksum += Float(actual) }
                }
            }
        })
        results.append(.measure("e4.temp.error.invalidContent", iterations: iterations) {
            invalid.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                } catch {
                    if case .invalidContent(.temperatureRaw(let sample, _)) = error { checksum += Float(sample) }
                }
            }
        })
        let last = stream[(index &- 1) & 63]
        results.append(.measure("e4.temp.error.duplicate", iterations: iterations) {
            last.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try decoder.decode(bytes, into: &packet)
                } catch {
                    if case .duplicate(let counter) = error { checksum += Float(counter) }
                }
            }
        })
        Self.keep(Double(checksum), decoder.statistics.packets)
        return results
    }

    /// Battery, control (button) and command packets: variable length, no flow counter.
    static func events(iterations: Int) -> [AllocationMeasurement] {
        var batteryPacket = E4PacketBytes()
        E4Battery.encode(percent: 83, into: &batteryPacket)
        let batteryInvalid = Self.filled(1, 101)
        let empty = Self.filled(0, 0)
        var tagPacket = E4PacketBytes()
        E4Control.encodeTag(into: &tagPacket)
        var commandPacket = E4PacketBytes()
        E4Command.start(unixTime: 1_700_000_000).encode(into: &commandPacket)
        let commandInvalid = Self.filled(5, 0x7F)
        var battery = E4BatteryDecoder()
        var control = E4ControlDecoder()
        var checksum: Float = 0
        var results: [AllocationMeasurement] = []

        results.append(.measure("e4.battery.decode", iterations: iterations) {
            batteryPacket.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    checksum += try battery.decode(bytes).level
                } catch {
                    checksum -= 1
                }
            }
        })
        results.append(.measure("e4.battery.error.tooShort", iterations: iterations) {
            empty.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    checksum += try battery.decode(bytes).level
                } catch {
                    if case .tooShort(let minimum, _) = error { checksum += Float(minimum) }
                }
            }
        })
        results.append(.measure("e4.battery.error.invalidContent", iterations: iterations) {
            batteryInvalid.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    checksum += try battery.decode(bytes).level
                } catch {
                    if case .invalidContent(.batteryPercent(let percent)) = error { checksum += Float(percent) }
                }
            }
        })
        results.append(.measure("e4.control.decode", iterations: iterations) {
            tagPacket.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    if try control.decode(bytes) == .tag { checksum += 1 }
                } catch {
                    checksum -= 1
                }
            }
        })
        results.append(.measure("e4.control.error.tooShort", iterations: iterations) {
            empty.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    if try control.decode(bytes) == .tag { checksum += 1 }
                } catch {
                    if case .tooShort(let minimum, _) = error { checksum += Float(minimum) }
                }
            }
        })
        results.append(.measure("e4.command.decode", iterations: iterations) {
            commandPacket.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    if case .start(let time) = try E4Command.decode(bytes) { checksum += Float(time & 1) }
                } catch {
                    checksum -= 1
                }
            }
        })
        results.append(.measure("e4.command.error.invalidContent", iterations: iterations) {
            commandInvalid.withUnsafeBytes { bytes in
                do throws(E4DecodeError) {
                    _ = try E4Command.decode(bytes)
                } catch {
                    if case .invalidContent(.commandOpcode(let opcode)) = error { checksum += Float(opcode) }
                }
            }
        })
        Self.keep(Double(checksum), battery.statistics.packets &+ control.statistics.packets)
        return results
    }

    static func encoders(iterations: Int) -> [AllocationMeasurement] {
        var packet = E4PacketBytes()
        var counter = 0
        var checksum = 0
        var results: [AllocationMeasurement] = []
        var encoder = E4BVPEncoder()
        results.append(.measure("e4.bvp.encode", iterations: iterations) {
            var green = InlineArray<11, Int>(repeating: counter % 50)
            var red = InlineArray<11, Int>(repeating: -(counter % 50))
            checksum &+= encoder.encode(green: &green, red: &red, into: &packet)
            checksum &+= Int(packet[19])
            counter &+= 1
        })
        results.append(.measure("e4.acc.encode", iterations: iterations) {
            let axis = InlineArray<6, Int8>(repeating: Int8(truncatingIfNeeded: counter))
            E4ACC.encode(x: axis, y: axis, z: axis, counter: UInt16(truncatingIfNeeded: counter), into: &packet)
            checksum &+= Int(packet[18])
            counter &+= 1
        })
        results.append(.measure("e4.gsr.encode", iterations: iterations) {
            var codes = InlineArray<6, UInt32>(repeating: E4GSR.code(microsiemens: 1 + Double(counter & 7)))
            checksum &+= E4GSR.encode(codes: &codes, counter: UInt16(truncatingIfNeeded: counter), into: &packet)
            checksum &+= Int(packet[2])
            counter &+= 1
        })
        results.append(.measure("e4.temp.encode", iterations: iterations) {
            let raw = InlineArray<8, UInt16>(repeating: E4Temperature.raw(celsius: 30 + Double(counter & 7)))
            E4Temperature.encode(raw: raw, counter: UInt32(truncatingIfNeeded: counter), into: &packet)
            checksum &+= Int(packet[0])
            counter &+= 1
        })
        results.append(.measure("e4.events.encode", iterations: iterations) {
            E4Battery.encode(percent: UInt8(counter % 101), into: &packet)
            checksum &+= Int(packet[0])
            E4Control.encodeTag(into: &packet)
            checksum &+= Int(packet[0])
            E4Command.start(unixTime: UInt32(truncatingIfNeeded: counter)).encode(into: &packet)
            checksum &+= Int(packet[1])
            counter &+= 1
        })
        Self.keep(Double(checksum), UInt64(counter))
        return results
    }

    /// Makes a result observable so the optimiser cannot drop the measured work.
    static func keep(_ value: Double, _ count: UInt64) {
        if value.isNaN && count == UInt64.max { printError("unreachable: \(value)") }
    }
}
