//! `gavel approvers`: enrol people who approve with a second factor, list
//! them, remove them (docs/approvals.md, "Approvers").

use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::json;

use gavel::approvals::approvers;
use gavel::principal::Principal;

use super::{Exit, Format, FormatArgs, Global, render};

#[derive(Subcommand, Debug)]
pub enum ApproversCommand {
    /// Enrol NAME with a new TOTP secret, shown once as a QR code for their
    /// authenticator app; with --passkey, a link to make a passkey on the approval page
    Add(AddArgs),
    /// The people enrolled now: name, factor, key digest, who enrolled them and when
    List(ListArgs),
    /// Record that NAME approves nothing from now on, and delete their secret
    Remove(NameArgs),
}

#[derive(Args, Debug)]
pub struct NameArgs {
    /// The person's name: letters, digits, `.`, `_`, `-`
    pub name: String,
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The person's name: letters, digits, `.`, `_`, `-`
    pub name: String,
    /// Enrol a passkey instead: prints a one-time link (15 minutes) to the
    /// approval page (`gavel approvals --tls --url https://NAME`), where the
    /// person makes it
    #[arg(long)]
    pub passkey: bool,
    /// The approval page's public address, for the link [default: printed as a path]
    #[arg(long, value_name = "URL", requires = "passkey")]
    pub url: Option<String>,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub format: FormatArgs,
}

pub fn run(global: &Global, command: ApproversCommand) -> anyhow::Result<Exit> {
    match command {
        ApproversCommand::Add(args) if args.passkey => {
            let store = global.open_store()?;
            let now = chrono::Utc::now().timestamp_micros();
            let code = approvers::start_passkey_enrolment(&store, &args.name, now)?;
            let page = args.url.as_deref().unwrap_or("").trim_end_matches('/');
            render::line(&format!(
                "{page}/enrol#name={}&code={code}\n\n\
                 open this link on {}'s device within 15 minutes{}, and make a passkey there;\n\
                 `gavel approvers list` shows them once enrolled. The link is theirs alone: \
                 it enrols whoever opens it first.",
                args.name,
                args.name,
                if page.is_empty() {
                    " (on the approval page's address)"
                } else {
                    ""
                },
            ))?;
        }
        ApproversCommand::Add(args) => {
            let mut store = global.open_store()?;
            let by = Arc::new(Principal::current("cli").with_host_id_beside(store.path()));
            let totp = approvers::enrol_totp(&mut store, &args.name, &by)?;
            let uri = totp.uri("gavel", &format!("{}@{}", args.name, by.host));
            let code = qrcode::QrCode::new(uri.as_bytes())?;
            let image = code
                .render::<qrcode::render::unicode::Dense1x2>()
                .quiet_zone(true)
                .build();
            render::line(&image)?;
            render::line(&format!("{uri}\n"))?;
            render::line(&format!(
                "enrolled {}: scan the code (or the URI) with an authenticator app; it is not shown again.\n\
                 Approve with `gavel approve CALL --as {} --code CODE`.",
                args.name, args.name
            ))?;
        }
        ApproversCommand::List(args) => {
            let people = match global.db_path()?.exists() {
                true => approvers::enrolled(&global.read_store()?)?,
                false => Vec::new(),
            };
            match args.format.get() {
                Format::Table if people.is_empty() => render::line("no approvers enrolled")?,
                Format::Table => render::table(
                    &["name", "factor", "key sha256", "enrolled by", "at"],
                    people.iter().map(|p| {
                        vec![
                            p.name.clone(),
                            p.factor.as_str().to_owned(),
                            render::cell(&p.key_sha256, 16),
                            p.enrolled_by.clone(),
                            gavel::archive::format_time(p.ts_us),
                        ]
                    }),
                )?,
                Format::Json => render::json(&json!(people))?,
                Format::Jsonl => {
                    for person in &people {
                        render::json(&json!(person))?;
                    }
                }
            }
        }
        ApproversCommand::Remove(args) => {
            let mut store = global.open_store()?;
            let by = Arc::new(Principal::current("cli").with_host_id_beside(store.path()));
            approvers::remove(&mut store, &args.name, &by)?;
            render::line(&format!(
                "removed {}: they approve nothing from now on",
                args.name
            ))?;
        }
    }
    Ok(Exit::Ok)
}
