/// Why a check could not run (as opposed to a case exceeding its budget): printed, and the tool exits 1.
struct CheckError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
