//! Output of the admin commands: readable tables by default, JSON with `--json`.

use std::io::Write;

use serde_json::Value;

/// How a command prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns with a header line.
    Table,
    /// One JSON document on stdout.
    Json,
}

/// Writes `rows` under `headers`, columns padded to their widest cell, two spaces apart;
/// newlines and tabs in cells are shown as `\n` and `\t` so a row stays one line.
pub fn table(out: &mut impl Write, headers: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let clean = |s: &str| s.replace('\n', "\\n").replace('\t', "\\t");
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let last = cells.len().saturating_sub(1);
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            s.push_str(c);
            if i < last {
                let pad = widths[i].saturating_sub(c.chars().count()) + 2;
                s.push_str(&" ".repeat(pad));
            }
        }
        s
    };
    writeln!(out, "{}", line(headers.to_vec()))?;
    for r in &rows {
        writeln!(out, "{}", line(r.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

/// Prints `value` as pretty JSON on stdout.
pub fn json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    );
}

/// Prints a table on stdout.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let stdout = std::io::stdout();
    let _ = table(&mut stdout.lock(), headers, rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let mut out = Vec::new();
        table(
            &mut out,
            &["NAME", "VISIBLE"],
            &[
                vec!["orders".into(), "3".into()],
                vec!["a\nb".into(), "12".into()],
            ],
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "NAME    VISIBLE\norders  3\na\\nb    12\n"
        );
    }
}
