/// One measured figure: the table row people read and the number a script compares.
struct BenchRow {
    let name: String
    let result: String
    /// A stable snake_case key for the JSON report.
    let key: String
    let value: Double
    let unit: String
}
