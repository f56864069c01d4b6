//! `cargo xtask gen`: writes the man pages in `man/` and the shell completions in
//! `completions/` from the commands' clap definitions. `--check` writes nothing and fails
//! when a committed file differs from what would be generated, so CI catches a flag that
//! changed without its docs.

mod completions;
mod dynamic;
mod man;
mod pages;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Project chores",
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Generate man/*.1 and completions/* from the clap definitions
    Gen {
        /// Write nothing; exit 1 if a committed file is stale
        #[arg(long)]
        check: bool,
    },
}

/// One file the generator owns, with the bytes it should hold.
struct Generated {
    path: PathBuf,
    contents: Vec<u8>,
}

fn main() -> ExitCode {
    let Task::Gen { check } = Cli::parse().task;
    let root = workspace_root();
    let result = generate_all().and_then(|files| {
        if check {
            check_files(&root, &files)
        } else {
            write_files(&root, &files).map(|()| ExitCode::SUCCESS)
        }
    });
    result.unwrap_or_else(|err| {
        eprintln!("xtask: error: {err}");
        ExitCode::FAILURE
    })
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Every generated file, as paths relative to the workspace root, in a fixed order.
fn generate_all() -> std::io::Result<Vec<Generated>> {
    let mut files = Vec::new();
    for page in pages::PAGES {
        files.push(Generated {
            path: Path::new("man").join(format!("{}.1", page.name)),
            contents: man::render(page, pages::PAGES)?,
        });
        for (file_name, contents) in completions::render(page.name, (page.command)()) {
            files.push(Generated {
                path: Path::new("completions").join(file_name),
                contents,
            });
        }
    }
    Ok(files)
}

/// Files in `man/` and `completions/` that look generated but no command produces any more
/// (a renamed or removed command). Only our own naming patterns count, so a hand-written
/// file placed there is left alone.
fn orphans(root: &Path, files: &[Generated]) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for dir in ["man", "completions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = Path::new(dir).join(&name);
            let ours = match dir {
                "man" => name.starts_with("ag-") && name.ends_with(".1"),
                _ => {
                    name.starts_with("_ag-")
                        || (name.starts_with("ag-")
                            && (name.ends_with(".bash") || name.ends_with(".fish")))
                }
            };
            if ours && entry.file_type()?.is_file() && !files.iter().any(|f| f.path == rel) {
                found.push(rel);
            }
        }
    }
    found.sort();
    Ok(found)
}

fn check_files(root: &Path, files: &[Generated]) -> std::io::Result<ExitCode> {
    let mut stale = Vec::new();
    for file in files {
        match std::fs::read(root.join(&file.path)) {
            Ok(on_disk) if on_disk == file.contents => {}
            Ok(_) => stale.push(format!("{} (differs)", file.path.display())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                stale.push(format!("{} (missing)", file.path.display()));
            }
            Err(err) => return Err(with_path(err, &file.path)),
        }
    }
    for orphan in orphans(root, files)? {
        stale.push(format!("{} (no longer generated)", orphan.display()));
    }
    if stale.is_empty() {
        eprintln!("xtask: {} generated files are current", files.len());
        return Ok(ExitCode::SUCCESS);
    }
    for line in &stale {
        eprintln!("stale: {line}");
    }
    eprintln!(
        "xtask: error: {} generated file(s) out of date with the clap definitions\n\
         hint: run `cargo xtask gen` and commit the result",
        stale.len()
    );
    Ok(ExitCode::FAILURE)
}

/// Writes only what changed, so an up-to-date tree keeps its timestamps.
fn write_files(root: &Path, files: &[Generated]) -> std::io::Result<()> {
    let mut written = 0;
    for file in files {
        let path = root.join(&file.path);
        if std::fs::read(&path).is_ok_and(|on_disk| on_disk == file.contents) {
            continue;
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|err| with_path(err, &file.path))?;
        }
        std::fs::write(&path, &file.contents).map_err(|err| with_path(err, &file.path))?;
        eprintln!("wrote {}", file.path.display());
        written += 1;
    }
    for orphan in orphans(root, files)? {
        std::fs::remove_file(root.join(&orphan)).map_err(|err| with_path(err, &orphan))?;
        eprintln!("removed {} (no longer generated)", orphan.display());
        written += 1;
    }
    if written == 0 {
        eprintln!("xtask: {} generated files already current", files.len());
    }
    Ok(())
}

fn with_path(err: std::io::Error, path: &Path) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CI runs this with the rest of the workspace's tests (`cargo test --workspace`), in the
    /// same build: no cargo is started from inside a test.
    #[test]
    fn generated_man_pages_and_completions_are_current() {
        let files = generate_all().expect("generate");
        let status = check_files(&workspace_root(), &files).expect("read the committed files");
        assert_eq!(
            status,
            ExitCode::SUCCESS,
            "run `cargo xtask gen` and commit the result"
        );
    }
}
