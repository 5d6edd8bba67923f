extension IBIEngine {
    /// What the accelerometer said around a pulse, for ``link(footTime:pulseOK:correlation:context:)``.
    struct MotionContext {
        /// The wrist moved: confirmed runs, the amplitude band, the foot check and the closer shape apply.
        var moving: Bool
        /// Mild motion: the rhythm learns only from intervals close to it.
        var mild: Bool
        /// 1 at rest, ``IBIConfiguration/mildMotionStrictness`` in mild motion.
        var strictness: Double
    }
}
