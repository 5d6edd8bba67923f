/// A phasic EDA response: a bi-exponential rise and recovery on top of the tonic level.
struct SkinConductanceResponse: Sendable {
    var onset: Double
    /// Peak height, µS.
    var amplitude: Double
}
