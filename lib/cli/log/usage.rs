//! `ag-log usage`: tokens and dollars by day, model, session or folder, from the `turn_end`
//! records. A record that says what its turn cost (`cost_usd`, written by `ag-prompt` at the
//! model's price then) counts as it says; one that does not is priced now, from the model's
//! list price or the configuration's; a model with no price counts its tokens and no dollars.

use std::collections::BTreeMap;

use serde_json::json;

use crate::cli::{CliResult, Ctx};
use crate::store::EndedTurn;
use crate::usage::{self, Tokens};

#[derive(Debug, clap::Args)]
pub(crate) struct UsageArgs {
    /// What a row is
    #[arg(long, value_enum, value_name = "WHAT", default_value = "day")]
    by: By,
    /// Only turns since then: a duration back from now (`7d`, `24h`) or a date (`2026-11-01`)
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    since: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum By {
    /// The UTC day a turn ended
    Day,
    /// The model that answered
    Model,
    /// The session
    Session,
    /// The session's directory
    Folder,
}

fn parse_since(s: &str) -> Result<i64, String> {
    crate::clock::parse_since(s, crate::clock::now_ms())
}

#[derive(Debug, Default)]
struct Row {
    turns: u64,
    tokens: Tokens,
    cost_usd: f64,
    /// Turns whose model has no price: their tokens are counted, their cost is not.
    unpriced: u64,
}

pub(crate) fn run(ctx: &mut Ctx, args: UsageArgs) -> CliResult<()> {
    let store = ctx.read_store()?;
    let config = ctx.config()?.clone();
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    for t in store.ended_turns(args.since.unwrap_or(0))? {
        let row = rows.entry(key(&t, args.by)).or_default();
        let tokens = Tokens::of(&t.usage);
        row.turns += 1;
        row.tokens.add(&tokens);
        match t.cost_usd.or_else(|| priced(&t, &tokens, &config)) {
            Some(usd) => row.cost_usd += usd,
            None => row.unpriced += 1,
        }
    }
    let head = match args.by {
        By::Day => "DAY",
        By::Model => "MODEL",
        By::Session => "SESSION",
        By::Folder => "FOLDER",
    };
    if ctx.global.json {
        for (k, r) in &rows {
            ctx.out.line(
                &json!({"key": k, "turns": r.turns, "input": r.tokens.input,
                    "output": r.tokens.output, "cache_read": r.tokens.cache_read,
                    "cache_write": r.tokens.cache_write, "cost_usd": usage::round(r.cost_usd),
                    "unpriced_turns": r.unpriced})
                .to_string(),
            )?;
        }
    } else {
        let mut total = Row::default();
        let mut table: Vec<Vec<String>> = Vec::new();
        for (k, r) in &rows {
            total.turns += r.turns;
            total.tokens.add(&r.tokens);
            total.cost_usd += r.cost_usd;
            total.unpriced += r.unpriced;
            table.push(cells(k, r));
        }
        // The total is for people; a pipe gets the rows alone, to sum or cut.
        if rows.len() > 1 && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            table.push(cells("total", &total));
        }
        crate::cli::table::print(
            &mut ctx.out,
            &[
                head,
                "TURNS",
                "INPUT",
                "OUTPUT",
                "CACHE READ",
                "CACHE WRITE",
                "COST",
            ],
            table,
        )?;
        if total.unpriced > 0 {
            ctx.out.note(&format!(
                "{} turn(s) on models without a price are not in COST; set [models.\"PROVIDER/NAME\"] price in the config",
                total.unpriced
            ));
        }
    }
    if rows.is_empty() {
        ctx.out.note("no turns ended in that time");
    }
    Ok(())
}

/// A record without `cost_usd`, priced now.
fn priced(t: &EndedTurn, tokens: &Tokens, config: &crate::config::Config) -> Option<f64> {
    usage::turn_cost(&t.session_model, Some(&t.model), tokens, None, config)
}

fn key(t: &EndedTurn, by: By) -> String {
    match by {
        By::Day => jiff::Timestamp::from_millisecond(t.at_ms)
            .map(|ts| ts.strftime("%Y-%m-%d").to_string())
            .unwrap_or_default(),
        By::Model if t.model.is_empty() => "(unknown)".into(),
        By::Model => t.model.clone(),
        By::Session if t.handle.is_empty() => t.session.clone(),
        By::Session => t.handle.clone(),
        By::Folder => t.cwd.clone(),
    }
}

fn cells(k: &str, r: &Row) -> Vec<String> {
    vec![
        k.to_string(),
        r.turns.to_string(),
        r.tokens.input.to_string(),
        r.tokens.output.to_string(),
        r.tokens.cache_read.to_string(),
        r.tokens.cache_write.to_string(),
        format!(
            "${:.4}{}",
            r.cost_usd,
            if r.unpriced > 0 { " +?" } else { "" }
        ),
    ]
}
