import Foundation

/// Tables for the HTML reports (`bench`, `simulate`, `demo` and `forecast --html`): Markdown tables and
/// name–value rows as HTML tables, text escaped, and the style the pages share (a wide table scrolls
/// inside its box instead of running past the page's edge).
public enum HTMLTable {
    /// The pages' style sheet.
    public static let style = """
        body{font:14px system-ui,sans-serif;margin:2em;color:#222}
        table{border-collapse:collapse;margin:0.5em 0;font-size:13px}
        td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}
        td:first-child,th:first-child{text-align:left}th{background:#f0f0f0}
        td.sub{padding-left:1.5em}th.section{text-align:left;background:#e4e9ef}
        .wrap{overflow-x:auto;max-width:100%}svg{display:block;margin:1em 0;max-width:100%;height:auto}
        h1{font-size:1.3em}h2{font-size:1.1em}ul{color:#555}
        """

    public static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    /// Markdown text: each table (`| a | b |` lines, the second a separator) as an HTML table in a
    /// scrolling box, every other line as a paragraph, in their order.
    public static func fromMarkdown(_ markdown: String) -> String {
        var html = ""
        var rows: [String] = []
        func endTable() {
            guard !rows.isEmpty else { return }
            html += "<div class=\"wrap\"><table>" + rows.joined() + "</table></div>"
            rows = []
        }
        for line in markdown.split(separator: "\n") {
            guard line.hasPrefix("|") else {
                endTable()
                if !line.trimmingCharacters(in: .whitespaces).isEmpty { html += "<p>" + escape(String(line)) + "</p>" }
                continue
            }
            if line.hasPrefix("|---") || line.hasPrefix("|:--") || line.hasPrefix("| ---") { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { escape($0.trimmingCharacters(in: .whitespaces)) }
            let tag = rows.isEmpty ? "th" : "td"
            rows.append("<tr>" + cells.map { "<\(tag)>\($0)</\(tag)>" }.joined() + "</tr>")
        }
        endTable()
        return html
    }

    /// Name–value rows as a two-column table: a row without a value heads a section; a name indented
    /// with spaces is a detail of the row above.
    public static func rows(_ rows: [(name: String, value: String?)]) -> String {
        let body = rows.map { row -> String in
            guard let value = row.value else {
                return "<tr><th class=\"section\" colspan=\"2\">\(escape(row.name))</th></tr>"
            }
            let name = row.name.trimmingCharacters(in: .whitespaces)
            let detail = row.name.hasPrefix(" ") ? " class=\"sub\"" : ""
            return "<tr><td\(detail)>\(escape(name))</td><td>\(escape(value))</td></tr>"
        }
        return "<div class=\"wrap\"><table>" + body.joined() + "</table></div>"
    }
}
