//! One command's man page, as one roff document: clap_mangen renders what clap knows (name,
//! synopsis, description, options, and every subcommand with its own synopsis and options
//! under COMMANDS), then come the page's hand-written sections and SEE ALSO.
//!
//! clap_mangen renders whole sections only, each with its own `.SH` line and roff preamble;
//! subcommands are stitched in as `.SS` subsections by dropping those. The `.TH` line has no
//! date and the package version, so the output is the same on every run.

use std::io;

use clap_mangen::roff::{bold, roman, Inline, Roff};
use clap_mangen::Man;

use crate::pages::{Block, Page, Section};

pub fn render(page: &Page, all: &[Page]) -> io::Result<Vec<u8>> {
    let mut command = (page.command)();
    command.build();
    let version = command.get_version().unwrap_or_default().to_owned();
    let man = Man::new(command.clone());

    // Written by hand: roff drops an empty `.TH` argument instead of quoting it, which
    // would shift the source into the date's place.
    let mut out = Roff::new().render();
    out.push_str(&format!(
        ".TH {} 1 \"\" \"agkit {version}\" \"General Commands Manual\"\n",
        page.name.to_uppercase().replace('-', "\\-"),
    ));
    out.push_str(&section(&man, Man::render_name_section)?);
    out.push_str(&section(&man, Man::render_synopsis_section)?);
    out.push_str(&section(&man, Man::render_description_section)?);
    out.push_str(&section(&man, Man::render_options_section)?);
    if command.get_subcommands().any(|sub| !sub.is_hide_set()) {
        out.push_str(".SH COMMANDS\n");
        subcommands(&command, &mut out)?;
    }

    let mut roff = Roff::new();
    for s in page.sections {
        hand_written(s, &mut roff);
    }
    see_also(page, all, &mut roff);
    out.push_str(without_preamble(&roff.render()));
    Ok(out.into_bytes())
}

type RenderSection = fn(&Man, &mut dyn io::Write) -> io::Result<()>;

/// One clap_mangen section, without the roff preamble that every render call repeats.
fn section(man: &Man, render: RenderSection) -> io::Result<String> {
    let mut buf = Vec::new();
    render(man, &mut buf)?;
    Ok(without_preamble(&utf8(buf)?).to_owned())
}

/// The body of a clap_mangen section: without the preamble and its `.SH` line. Headings
/// further down (options under a `help_heading`) become bold lead-ins, since a `.SH` there
/// would end the subcommand's subsection.
fn section_body(man: &Man, render: RenderSection) -> io::Result<String> {
    let text = section(man, render)?;
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with(".SH "),
        "clap_mangen section starts with `{first}`, not .SH"
    );
    Ok(lines
        .map(|line| match line.strip_prefix(".SH ") {
            Some(heading) => format!(".PP\n\\fB{}\\fR\n", heading.trim_matches('"')),
            None => format!("{line}\n"),
        })
        .collect())
}

/// Each subcommand as `.SS "cmd sub"`: its synopsis, what it does, and its own options.
/// The global options (and -h) are left out; they are listed once under OPTIONS.
fn subcommands(parent: &clap::Command, out: &mut String) -> io::Result<()> {
    for sub in parent.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        let inherited: Vec<String> = sub
            .get_arguments()
            .filter(|arg| {
                arg.is_global_set() || ["help", "version"].contains(&arg.get_id().as_str())
            })
            .map(|arg| arg.get_id().to_string())
            .collect();
        let mut own = sub.clone();
        for id in inherited {
            own = own.mut_arg(id, |arg| arg.hide(true));
        }
        let full_name = own
            .get_bin_name()
            .unwrap_or_else(|| own.get_name())
            .to_owned();
        let man = Man::new(own.clone());
        out.push_str(&format!(".SS \"{}\"\n", full_name.replace('-', "\\-")));
        out.push_str(&section_body(&man, Man::render_synopsis_section)?);
        out.push_str(".PP\n");
        out.push_str(&section_body(&man, Man::render_description_section)?);
        if own.get_arguments().any(|arg| !arg.is_hide_set()) {
            out.push_str(&section_body(&man, Man::render_options_section)?);
        }
        subcommands(&own, out)?;
    }
    Ok(())
}

fn hand_written(section: &Section, roff: &mut Roff) {
    roff.control("SH", [section.title]);
    for block in section.blocks {
        match block {
            Block::Para(text) => {
                roff.control("PP", []);
                roff.text(marked_up(text));
            }
            Block::Item(term, text) => {
                roff.control("TP", []);
                roff.text([bold(*term)]);
                roff.text(marked_up(text));
            }
            Block::Example(lead, code) => {
                if !lead.is_empty() {
                    roff.control("PP", []);
                    roff.text(marked_up(lead));
                }
                // .RS rather than .IP, which would change the indent of the .TP items after it.
                roff.control("RS", ["4"]);
                roff.control("PP", []);
                roff.control("nf", []);
                for line in code.lines() {
                    roff.text([roman(line)]);
                }
                roff.control("fi", []);
                roff.control("RE", []);
            }
        }
    }
}

/// Text with `code` spans set in bold.
fn marked_up(text: &str) -> Vec<Inline> {
    text.split('`')
        .enumerate()
        .filter(|(_, part)| !part.is_empty())
        .map(|(i, part)| if i % 2 == 1 { bold(part) } else { roman(part) })
        .collect()
}

/// The other commands of the kit, so a reader of one page finds the rest.
fn see_also(page: &Page, all: &[Page], roff: &mut Roff) {
    let others: Vec<&str> = all
        .iter()
        .map(|p| p.name)
        .filter(|&name| name != page.name)
        .collect();
    if others.is_empty() {
        return;
    }
    roff.control("SH", ["SEE ALSO"]);
    let mut line = Vec::new();
    for (i, name) in others.into_iter().enumerate() {
        if i > 0 {
            line.push(roman(", "));
        }
        line.push(bold(name));
        line.push(roman("(1)"));
    }
    roff.text(line);
}

/// Every roff render starts with the same preamble (it defines how apostrophes print); the
/// page needs it once, at the top.
fn without_preamble(text: &str) -> &str {
    let preamble = Roff::new().render();
    text.strip_prefix(preamble.as_str()).unwrap_or(text)
}

fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))
}
