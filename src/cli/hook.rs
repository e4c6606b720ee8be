//! `gavel hook <client>`: an agent client's hook command (the adapter is
//! `gavel::frontend::hook`). Exit codes follow the client, not gavel's table.

use anyhow::Context as _;
use clap::Args;

use gavel::clients;
use gavel::frontend::hook::HookOptions;
use gavel::frontend::hook_process::answer_stdin;
use gavel::session::HookAsk;

use super::{Exit, Global};

#[derive(Args, Debug)]
pub struct HookArgs {
    /// The agent client whose hook this is
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(
        clients::CLIENTS.iter().map(|c| c.name())
    ))]
    pub client: String,
    /// What an `ask` becomes: `auto` hands it to the client's prompt where the
    /// client always can (Claude Code, Cursor) and denies it as "needs approval"
    /// elsewhere; `prompt` also hands it over where the client prompts only in
    /// interactive sessions (Gemini CLI, Copilot CLI); `deny` never hands it over;
    /// `wait[=DURATION]` keeps the hook waiting in the pending queue until `gavel
    /// approve` / `gavel reject` answers from another terminal, or DURATION ends
    /// (default: 10 s less than the client's hook timeout; then denied, cancelled/timeout)
    /// [default: `wait=…` when the policy's `[approval] wait` sets one, else `auto`]
    #[arg(long, value_name = "auto|prompt|deny|wait[=DURATION]", value_parser = HookAsk::parse)]
    pub ask: Option<HookAsk>,
    /// The event name, for payloads that do not carry it (Copilot's camelCase hooks)
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
}

pub fn run(global: &Global, args: HookArgs) -> anyhow::Result<Exit> {
    // The value parser admits only known names.
    let client = clients::by_name(&args.client)
        .with_context(|| format!("unknown client `{}`", args.client))?;
    let options = HookOptions {
        ask: args.ask,
        event: args.event,
    };
    Ok(match answer_stdin(client, &global.setup(), &options) {
        0 => Exit::Ok,
        1 => Exit::Failed,
        _ => Exit::Error,
    })
}
