//! Tables for people, rows for programs: on a terminal a `tabled` table with a header that
//! fits the terminal's width (the widest columns are cut first, with `…`); in a pipe, one
//! tab-separated line per row, without header or padding, so `cut -f2` and `awk -F'\t'` work.

use std::io::{self, IsTerminal};

use tabled::settings::peaker::PriorityMax;
use tabled::settings::{Style, Width};

use super::{escape_controls, Out};

/// The terminal's width: `COLUMNS` when set (as shells export it), else the terminal's, else
/// 80.
pub(crate) fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or_else(|| terminal_size::terminal_size().map(|(w, _)| w.0 as usize))
        .unwrap_or(80)
}

/// Print `rows` under `header`: a table on a terminal, tab-separated lines otherwise. Cells
/// are untrusted text: controls are escaped, and tabs and newlines become spaces.
pub(crate) fn print(out: &mut Out, header: &[&str], rows: Vec<Vec<String>>) -> io::Result<()> {
    let clean = |c: &str| escape_controls(&c.replace(['\t', '\n', '\r'], " "), false);
    if !io::stdout().is_terminal() {
        for row in rows {
            let cells: Vec<String> = row.iter().map(|c| clean(c)).collect();
            out.line(&cells.join("\t"))?;
        }
        return Ok(());
    }
    let mut all = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    all.extend(
        rows.into_iter()
            .map(|r| r.iter().map(|c| clean(c)).collect()),
    );
    let mut table = tabled::builder::Builder::from_iter(all).build();
    table.with(Style::blank());
    table.with(
        Width::truncate(width())
            .suffix("…")
            .priority(PriorityMax::right()),
    );
    out.line(&table.to_string())
}
