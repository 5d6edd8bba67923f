/// The product version, shown by `--version` and published in the agent's status.
public enum Version {
    public static let string = "0.1.0"
}
