/// How an accepted packet follows the one before it, judged by the flow counter.
///
/// The timing layer (SPEC §8) uses it to place the packet's samples: anchor on ``first`` and ``restart``,
/// advance by one packet on ``next``, and skip `lost` packets' worth of samples on ``gap(lost:)``.
public enum E4Continuity: Hashable, Sendable {
    /// The first packet since the decoder was created or reset: nothing before it, nothing counted lost.
    case first
    /// The counter advanced by exactly one.
    case next
    /// The counter advanced by `lost + 1` (modulo its range): `lost` packets never arrived.
    case gap(lost: Int)
    /// The counter jumped backwards by more than it can wrap forwards (16- and 32-bit counters only): the
    /// device restarted its counter. Re-anchor; nothing is counted lost.
    case restart
}
