//! `--html DIR`: a static triage page per failing record, and an index. Each page shows the
//! record line, the replay command, and for each output that mismatched the oracle a heat map
//! of its mismatching elements over the output's coordinates, the histogram of ulp distances
//! and the first mismatches with got and want. Self-contained HTML and inline SVG: no script,
//! no network.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::{Output, Reporter, Written, slug};
use crate::replay::Replay;
use crate::report::{self, Summary};
use crate::runner::{Event, RecordResult, RunReport};
use crate::triage::{HeatMap, Triage, UlpBin};

/// The heat map's largest drawn size, in pixels.
const MAP_WIDTH: f64 = 640.0;
const MAP_HEIGHT: f64 = 480.0;
/// A cell is drawn at most this many pixels wide, so a small output stays readable.
const MAX_CELL_PIXELS: f64 = 24.0;

pub struct HtmlReporter {
    dir: PathBuf,
    replay: Option<Replay>,
}

impl HtmlReporter {
    pub fn new(dir: PathBuf, replay: Option<Replay>) -> HtmlReporter {
        HtmlReporter { dir, replay }
    }

    fn write_pages(&self, run: &RunReport, summary: &Summary) -> Result<usize, String> {
        let failing: Vec<&RecordResult> = run.records.iter().filter(|r| r.red()).collect();
        let mut index = Vec::new();
        for (i, r) in failing.iter().enumerate() {
            let name = page_name(i, r);
            let page = page(r, self.replay.as_ref().and_then(|p| p.command(r)).as_deref());
            report::write_text(&self.dir.join(&name), &page).map_err(|e| format!("{name}: {e}"))?;
            index.push((name, r));
        }
        report::write_text(&self.dir.join("index.html"), &index_page(run, summary, &index)).map_err(|e| format!("index.html: {e}"))?;
        Ok(failing.len())
    }
}

impl Reporter for HtmlReporter {
    fn event(&mut self, event: &Event) {
        if let (Event::Started { backend, arch, .. }, Some(replay)) = (event, &mut self.replay) {
            replay.backend = backend.to_string();
            replay.arch = arch.to_string();
        }
    }

    fn write(&mut self, run: &RunReport, summary: &Summary) -> Option<Written> {
        let outcome = self.write_pages(run, summary).map(|n| Some(format!("{} failing record{}", n, if n == 1 { "" } else { "s" })));
        Some(Written { output: Output::TriagePages, path: self.dir.clone(), outcome })
    }
}

/// `01-tf_add-f32.html`: numbered, so two records that slug alike keep their own pages.
pub fn page_name(i: usize, r: &RecordResult) -> String {
    format!("{:02}-{}-{}.html", i + 1, slug(&r.op), slug(&r.record))
}

/// Text as HTML holds it.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:70em;color:#222}\
pre{white-space:pre-wrap;background:#f4f4f4;padding:.6em;border-radius:4px}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;font-family:monospace;text-align:right}\
th{background:#eee}.verdict{color:#b00;font-weight:bold}svg text{font-family:sans-serif;font-size:11px}\
section.tensor{border-top:2px solid #ddd;margin-top:2em}";

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(title)
    )
}

/// One failing record's page.
pub fn page(r: &RecordResult, replay: Option<&str>) -> String {
    let title = format!("{} ({})", r.op, r.record);
    let mut out = head(&format!("{title}: triage"));
    let _ = writeln!(out, "<p><a href=\"index.html\">all failing records</a></p>\n<h1 id=\"record\">{}</h1>", escape(&title));
    let verdict = if r.error.is_some() { "ERROR" } else { "FAIL" };
    let _ = writeln!(out, "<p class=\"verdict\">{verdict} ({})</p>", escape(&r.contract_file));
    let _ = writeln!(out, "<pre class=\"record-line\">{}</pre>", escape(&report::record_line(r)));
    let details = report::detail_lines(r);
    if !details.is_empty() {
        let _ = writeln!(out, "<pre class=\"details\">{}</pre>", escape(&details.join("\n")));
    }
    if let Some(command) = replay {
        let _ = writeln!(out, "<h2>Replay</h2>\n<p>Runs just this case again:</p>\n<pre class=\"replay\">{}</pre>", escape(command));
    }
    if r.triage.is_empty() {
        out.push_str(
            "<p class=\"no-triage\">No output mismatched the oracle element by element here: the failure is the record \
             line's (an access, a race, an error).</p>\n",
        );
    }
    for (i, t) in r.triage.iter().enumerate() {
        tensor_section(&mut out, i, t);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn tensor_section(out: &mut String, i: usize, t: &Triage) {
    let shape: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    let _ = writeln!(out, "<section class=\"tensor\" id=\"tensor-{i}\" data-tensor=\"{}\">", escape(&t.tensor));
    let _ = writeln!(
        out,
        "<h2><span class=\"tensor-name\">{}</span>: {} of {} elements differ at {}</h2>\n<p>case {} (index {}), {} [{}]</p>",
        escape(&t.tensor),
        crate::format::count(t.mismatches),
        crate::format::count(t.elements),
        t.gate,
        escape(&t.case),
        t.case_index,
        escape(&t.dtype),
        shape.join(", ")
    );
    let h = &t.heat;
    let _ = writeln!(
        out,
        "<h3>Where the mismatches are</h3>\n<p>{} rows x {} columns{}; each cell {} x {} elements, its red the share of them that differ.</p>",
        crate::format::count(h.rows),
        crate::format::count(h.cols),
        if t.shape.len() > 2 { " (the leading axes flattened into rows)" } else { "" },
        h.cell_rows,
        h.cell_cols
    );
    heat_map(out, h);
    let _ = writeln!(out, "<h3>Distance from the oracle (ulps of {}), all elements</h3>", escape(&t.dtype));
    histogram(out, &t.ulp_histogram);
    let _ = writeln!(
        out,
        "<h3>First mismatches</h3>\n<table class=\"mismatches\">\n<tr><th>element</th><th>got</th><th>got bits</th><th>want</th><th>want bits</th><th>ulps</th></tr>"
    );
    for m in &t.first {
        let at: Vec<String> = m.coordinates.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(
            out,
            "<tr><td>[{}]</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            at.join(", "),
            escape(&m.got),
            escape(&m.got_bits),
            escape(&m.want),
            escape(&m.want_bits),
            m.ulp.map_or("NaN".to_string(), |u| u.to_string())
        );
    }
    out.push_str("</table>\n</section>\n");
}

/// The heat map as SVG: a light field the size of the output, a red cell wherever elements
/// differ (the deeper, the larger their share of the cell), each with its count as a tooltip.
fn heat_map(out: &mut String, h: &HeatMap) {
    let cell = (MAP_WIDTH / h.grid_cols as f64).min(MAP_HEIGHT / h.grid_rows as f64).min(MAX_CELL_PIXELS);
    let (width, height) = (cell * h.grid_cols as f64, cell * h.grid_rows as f64);
    let (left, top) = (60.0, 16.0);
    let _ = writeln!(
        out,
        "<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{:.0}\" role=\"img\" aria-label=\"heat map of mismatching elements\">",
        width + left + 10.0,
        height + top + 24.0
    );
    let _ = writeln!(
        out,
        "<rect class=\"field\" x=\"{left}\" y=\"{top}\" width=\"{width:.2}\" height=\"{height:.2}\" fill=\"#e8f0e8\" stroke=\"#999\"/>"
    );
    for gr in 0..h.grid_rows {
        for gc in 0..h.grid_cols {
            let count = h.counts[gr * h.grid_cols + gc];
            if count == 0 {
                continue;
            }
            let share = count as f64 / h.cell_elements(gr, gc) as f64;
            let (r0, c0) = (gr * h.cell_rows, gc * h.cell_cols);
            let (r1, c1) = ((r0 + h.cell_rows).min(h.rows) - 1, (c0 + h.cell_cols).min(h.cols) - 1);
            let _ = writeln!(
                out,
                "<rect class=\"mismatch\" x=\"{:.2}\" y=\"{:.2}\" width=\"{cell:.2}\" height=\"{cell:.2}\" fill=\"#c00\" fill-opacity=\"{:.3}\"><title>rows {r0}-{r1}, columns {c0}-{c1}: {count} of {} differ</title></rect>",
                left + gc as f64 * cell,
                top + gr as f64 * cell,
                0.2 + 0.8 * share,
                h.cell_elements(gr, gc)
            );
        }
    }
    let _ = writeln!(out, "<text x=\"{left}\" y=\"11\">column 0</text>");
    let _ = writeln!(out, "<text x=\"{:.2}\" y=\"11\" text-anchor=\"end\">column {}</text>", left + width, h.cols - 1);
    let _ = writeln!(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">row 0</text>", left - 4.0, top + 10.0);
    let _ = writeln!(out, "<text x=\"{}\" y=\"{:.2}\" text-anchor=\"end\">row {}</text>", left - 4.0, top + height, h.rows - 1);
    out.push_str("</svg>\n");
}

/// The ulp histogram as SVG bars on a log scale of counts, each labelled.
fn histogram(out: &mut String, bins: &[UlpBin]) {
    let (bar, gap, tall, base) = (28.0, 6.0, 120.0, 150.0);
    let most = bins.iter().map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    // room on the left for the first bar's slanted label
    let left = 90.0;
    let width = left + bins.len() as f64 * (bar + gap) + 10.0;
    let _ = writeln!(
        out,
        "<svg class=\"histogram\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"230\" role=\"img\" aria-label=\"ulp distance histogram\">"
    );
    for (i, b) in bins.iter().enumerate() {
        let x = left + i as f64 * (bar + gap);
        let h = if b.count == 0 { 0.0 } else { tall * (1.0 + (b.count as f64).ln()) / (1.0 + most.ln()) };
        let _ = writeln!(
            out,
            "<rect class=\"bin\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{bar}\" height=\"{h:.1}\" fill=\"#469\"><title>{}: {} elements</title></rect>",
            base - h,
            escape(&b.label),
            b.count
        );
        let _ = writeln!(out, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>", x + bar / 2.0, base - h - 3.0, b.count);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" transform=\"rotate(-40 {:.1} {:.1})\">{}</text>",
            x + bar / 2.0,
            base + 14.0,
            x + bar / 2.0,
            base + 14.0,
            escape(&b.label)
        );
    }
    out.push_str("</svg>\n");
}

fn index_page(run: &RunReport, summary: &Summary, pages: &[(String, &&RecordResult)]) -> String {
    let mut out = head(&format!("kernel-contracts {}: failing records", run.arch));
    let _ = writeln!(out, "<h1>Failing records on {}</h1>\n<pre class=\"summary\">{}</pre>", escape(&run.arch), escape(&summary.line()));
    if pages.is_empty() {
        out.push_str("<p class=\"none\">No record failed.</p>\n");
    } else {
        out.push_str("<ul class=\"pages\">\n");
        for (name, r) in pages {
            let _ = writeln!(
                out,
                "<li><a href=\"{}\">{} ({})</a>: {}</li>",
                escape(name),
                escape(&r.op),
                escape(&r.record),
                escape(&report::record_line(r))
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_records_page_holds_its_line_replay_heat_map_histogram_and_mismatches() {
        let run = super::super::fixture::run();
        let failing = &run.records[1];
        let html = page(failing, Some("contracts --only tf_add --record 'f16 & <bf16>' --case 0"));
        assert!(html.contains("<h1 id=\"record\">tf_add (f16 &amp; &lt;bf16&gt;)</h1>"), "{html}");
        assert!(html.contains("<pre class=\"replay\">contracts --only tf_add --record &#39;f16 &amp; &lt;bf16&gt;&#39; --case 0</pre>"));
        assert!(html.contains("<span class=\"tensor-name\">out</span>: 2 of 6 elements differ at shapes"), "{html}");
        // the two mismatching elements, [0, 1] and [1, 2], each a full red cell of its own
        let cells: Vec<&str> = html.lines().filter(|l| l.starts_with("<rect class=\"mismatch\"")).collect();
        assert_eq!(cells.len(), 2, "{html}");
        assert!(cells[0].contains("rows 0-0, columns 1-1: 1 of 1 differ") && cells[1].contains("rows 1-1, columns 2-2: 1 of 1 differ"));
        assert!(cells.iter().all(|c| c.contains("fill-opacity=\"1.000\"")));
        assert!(
            html.contains("<tr><td>[0, 1]</td><td>2.000</td><td>0x40000000</td><td>1.000</td><td>0x3f800000</td><td>8388608</td></tr>"),
            "{html}"
        );
        assert_eq!(html.matches("<rect class=\"bin\"").count(), 25, "bins 0 to 2^23, the empty ones too");
        assert!(
            !html.contains("<script") && !html.contains("http://")
                || html.matches("http://").count() == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        // a record that errored has a page without a heat map, saying why
        let errored = page(&run.records[2], None);
        assert!(errored.contains("class=\"no-triage\"") && errored.contains("was not declared"), "{errored}");
        assert_eq!(page_name(0, failing), "01-tf_add-f16-bf16.html");
    }
}
