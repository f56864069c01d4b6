//! The collision gate around mutating calls (`write`, `edit`, `bash`) in a shared worktree:
//! `write`/`edit` on a path another session claims is refused (`tools::collision`); the first
//! `bash` of a turn while others hold claims is held back once, naming what is claimed and by
//! whom; the paths others claim exclusively are read-only inside the call's sandbox (as they
//! exist when it starts); after a `bash` call, a claimed file it changed anyway (one created
//! under a glob, or with the sandbox off) is reported to the model and the room;
//! and when live peers share the tree and nobody claims anything, the turn's first mutating
//! call carries a one-line nudge naming them.

use serde_json::Value;

use super::super::Agent;
use crate::policy::Tool;
use crate::room::claims::{self, Claim};
use crate::room::watch::{self, Snapshot};
use crate::room::{roster, Line, LineKind};
use crate::tools::ToolOutput;

/// What to do about a call before it runs.
pub(in crate::agent) enum Before {
    Refuse(ToolOutput),
    Run(After),
}

/// What to do after it ran: compare the claimed files, add a nudge. For a `bash` call, also
/// what it may not write: the paths others claim, bound read-only in its sandbox.
#[derive(Default)]
pub(in crate::agent) struct After {
    watch: Option<(Snapshot, Vec<Claim>)>,
    note: Option<String>,
    pub(in crate::agent) read_only: Vec<std::path::PathBuf>,
}

impl Agent<'_> {
    /// Before a call the guard allowed.
    pub(in crate::agent) fn before_call(&self, name: &str, args: &Value) -> Before {
        if let Some(refused) = self.collision(name, args) {
            return Before::Refuse(refused);
        }
        let tool = Tool::parse(name);
        if !matches!(tool, Some(Tool::Write | Tool::Edit | Tool::Bash)) {
            return Before::Run(After::default());
        }
        let key = crate::room::worktree_key(&self.cwd());
        let room = self.rooms.of_key(key.clone());
        let all = match claims::active(self.store, &room, &mut |w| self.warn(w)) {
            Ok(a) => a,
            // Fail closed for bash, whose paths are unknown; write/edit were checked above.
            Err(e) if tool == Some(Tool::Bash) => {
                return Before::Refuse(ToolOutput::error(format!(
                    "bash refused, nothing ran: cannot read the claims of this worktree: {e}"
                )))
            }
            Err(_) => Vec::new(),
        };
        let me = self.me().from;
        let others: Vec<Claim> = all
            .iter()
            .filter(|c| !c.holder.same(&me))
            .cloned()
            .collect();
        let mut after = After::default();
        if tool == Some(Tool::Bash) && !others.is_empty() {
            let mut ids: Vec<String> = others.iter().map(|c| c.id.clone()).collect();
            ids.sort();
            let mut st = self.peer_state();
            let told = (st.turn.clone(), ids);
            if st.bash_told.as_ref() != Some(&told) {
                st.bash_told = Some(told);
                return Before::Refuse(ToolOutput::error(claimed_note(&others)));
            }
            drop(st);
            after.read_only = watch::read_only_paths(&key, &others);
            after.watch = Some((watch::snapshot(&key, &others), others));
        }
        if all.is_empty() {
            after.note = self.nudge(&key);
        }
        Before::Run(after)
    }

    /// After the call ran: report claimed files it changed, add the nudge.
    pub(in crate::agent) fn after_call(&self, mut out: ToolOutput, after: After) -> ToolOutput {
        if let Some((before, held)) = after.watch {
            let key = crate::room::worktree_key(&self.cwd());
            let changed = watch::changed(&before, &watch::snapshot(&key, &held));
            if !changed.is_empty() {
                let what: Vec<String> = changed
                    .iter()
                    .map(|p| {
                        let by: Vec<String> = watch::covering(&held, p)
                            .iter()
                            .map(|c| format!("{}'s claim {}", c.holder.display(), c.id))
                            .collect();
                        format!("{p} ({})", by.join(", "))
                    })
                    .collect();
                let said = format!(
                    "my bash command changed files others claim: {}",
                    what.join("; ")
                );
                let room = self.rooms.of_key(key);
                let mut line = Line::new(LineKind::Say, self.me().from);
                line.text = Some(said.clone());
                let posted = match room.append(&line) {
                    Ok(()) => "the room was told".to_string(),
                    Err(e) => format!("telling the room failed: {e}"),
                };
                out.text.push_str(&format!(
                    "\n[room] This command changed claimed files: {}. {posted}; tell the holders \
                     what you did (peer_message).",
                    what.join("; ")
                ));
            }
        }
        if let Some(n) = after.note {
            out.text.push_str(&format!("\n{n}"));
        }
        out
    }

    /// Once per turn, when live peers share the tree and nobody claims anything: who they
    /// are, and how to avoid stepping on them.
    fn nudge(&self, key: &std::path::Path) -> Option<String> {
        let mut st = self.peer_state();
        if st.turn.is_some() && st.nudged_turn == st.turn {
            return None;
        }
        let peers = roster::roster(
            self.store,
            &self.rooms.of_key(key.to_path_buf()),
            &self.session.id,
        )
        .ok()?;
        if peers.is_empty() {
            return None;
        }
        st.nudged_turn = st.turn.clone();
        let names: Vec<String> = peers
            .iter()
            .map(|p| format!("{} (session={})", p.name, p.handle))
            .collect();
        Some(format!(
            "[room] Also working in this worktree: {}; nobody has claimed files. Claim what you \
             change (peer_claim) or tell them (peer_message).",
            names.join(", ")
        ))
    }
}

/// Why the first `bash` of a turn did not run: what others claim, and how to go on.
fn claimed_note(others: &[Claim]) -> String {
    let held: Vec<String> = others
        .iter()
        .map(|c| {
            format!(
                "{} by {} ({}, intent {:?}; reach them with {})",
                c.paths.join(", "),
                c.holder.display(),
                c.mode,
                c.intent,
                c.how_to_reach()
            )
        })
        .collect();
    format!(
        "bash did not run: other sessions hold claims in this worktree: {}. If this command \
         leaves those paths alone, call bash again and it runs (what they claim exclusively is \
         read-only to it); if it would change them, ask the holder first. A claimed file a \
         command changes anyway is reported to you and to the room.",
        held.join("; ")
    )
}
