/// The version of this source tree, kept here and nowhere else (`switchboard --version` prints it).
public enum SwitchboardVersion {
    /// The semantic version; `-dev` while the changelog's "Unreleased" section is open.
    public static let current = "0.1.0-dev"
}
