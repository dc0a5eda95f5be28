//! `waiting-room-client apply` and `export`: a server's shows as a file an operator keeps
//! (docs/apply.md).
//!
//! The file names each show and its settings, in the server's own shape (`ShowSettings`, by
//! their JSON names): rate, cap, stock, the schedule of events, the fair start, …
//!
//! ```yaml
//! shows:
//!   fest:
//!     admitPerSecond: 100
//!     events:
//!       - name: presale
//!         startsAt: 2026-12-08T09:00:00Z
//!         settings: {admitPerSecond: 50}
//! ```
//!
//! `apply` makes the server match it: a show missing is made with its settings, a show whose
//! settings differ gets the fields that differ (one `PUT …/config`), one that matches is left
//! alone, so a second `apply` changes nothing. A setting the file leaves out is left as the
//! server has it; a show the file leaves out is named and left alone. `--dry-run` says what it
//! would change and changes nothing. `export` writes the file back from the server.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use reqwest::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use waiting_room::model::{DrawStage, DrawView, ShowList, ShowSettings, ShowStats};
use waiting_room::protocol::routes;

/// The file: each show by its id, with its settings.
#[derive(Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ShowsFile {
    /// The shows, by id.
    pub shows: BTreeMap<String, ShowSettings>,
    /// Access codes (docs/lanes.md), by show: a CSV file each (`code,lane[,uses]` a line),
    /// its path relative to this file's folder. Sent after the show's settings; codes the
    /// show holds already are kept as they are, so sending them again changes nothing.
    /// `export` writes none: the server keeps codes hashed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub codes: BTreeMap<String, PathBuf>,
}

/// The server and its operator token, as both commands take them.
#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// The waiting room's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080", value_parser = crate::server_url)]
    pub url: reqwest::Url,
    /// The operator token.
    #[arg(long, env = "ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: String,
}

/// `apply`'s flags.
#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// The file (YAML, or JSON, which is YAML too).
    pub file: PathBuf,
    /// The server.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Say what would change, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `export`'s flags.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The server.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Where to write the file (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One show's change, as `apply` makes it (or, dry, would).
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The show is made with these settings.
    Create(Box<ShowSettings>),
    /// These fields are sent (`PUT …/config`): each with what the server had.
    Update(Vec<(String, Option<Value>, Value)>),
    /// The show is as the file says.
    Same,
}

/// A show's codes as `apply` sent them (or, dry, would).
#[derive(Debug, Clone, PartialEq)]
pub struct CodesSent {
    /// The show.
    pub show: String,
    /// The CSV file.
    pub file: PathBuf,
    /// What the server added, and held already; `None` when not sent.
    pub counts: Option<(u64, u64)>,
}

/// What `apply` found and did, show by show: the file's shows, then those it leaves out.
#[derive(Debug, Default)]
pub struct Applied {
    /// Each show of the file and its change.
    pub changes: Vec<(String, Change)>,
    /// Each show's codes sent (or, dry, to send).
    pub codes: Vec<CodesSent>,
    /// Shows the server has and the file does not name.
    pub left_alone: Vec<String>,
}

impl Applied {
    /// Whether anything was (or would be) changed.
    pub fn changed(&self) -> bool {
        self.changes.iter().any(|(_, c)| *c != Change::Same)
            || self
                .codes
                .iter()
                .any(|c| c.counts.is_none_or(|(added, _)| added > 0))
    }

    /// A line a show, for a person.
    pub fn lines(&self, dry_run: bool) -> Vec<String> {
        let verb = |now: &str, would: &str| if dry_run { would } else { now }.to_owned();
        let mut out = Vec::new();
        for (show, change) in &self.changes {
            match change {
                Change::Create(settings) => {
                    let fields = fields(settings);
                    let names: Vec<&str> = fields.keys().map(String::as_str).collect();
                    out.push(format!(
                        "{show}: {} with {}",
                        verb("made", "would be made"),
                        if names.is_empty() {
                            "the server's defaults".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ));
                }
                Change::Update(fields) => {
                    for (name, had, wants) in fields {
                        out.push(format!(
                            "{show}: {name} {} {} → {}",
                            verb("changed", "would change"),
                            had.as_ref().map_or("(unset)".to_owned(), short),
                            short(wants)
                        ));
                    }
                }
                Change::Same => out.push(format!("{show}: as in the file")),
            }
        }
        for CodesSent {
            show,
            file: path,
            counts,
        } in &self.codes
        {
            out.push(match counts {
                None => format!("{show}: codes would be sent from {}", path.display()),
                Some((0, held)) => format!("{show}: codes as in {} ({held} held)", path.display()),
                Some((added, held)) => format!(
                    "{show}: {added} codes added from {} ({held} held already)",
                    path.display()
                ),
            });
        }
        for show in &self.left_alone {
            out.push(format!("{show}: not in the file, left alone"));
        }
        out
    }
}

/// A value in a line: short ones whole, long ones cut.
fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= 60 {
        text
    } else {
        format!("{}…", text.chars().take(59).collect::<String>())
    }
}

/// Runs `apply`, printing a line a change. Fails, naming the show, on the first refusal.
pub async fn apply_main(args: ApplyArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let mut file =
        parse(&text).with_context(|| format!("{} is not a shows file", args.file.display()))?;
    // Code files are named from the shows file's folder.
    let folder = args.file.parent().unwrap_or(std::path::Path::new("."));
    for path in file.codes.values_mut() {
        *path = folder.join(&*path);
    }
    let server = Server::new(&args.server)?;
    let applied = apply(&server, &file, args.dry_run).await?;
    for line in applied.lines(args.dry_run) {
        println!("{line}");
    }
    if !applied.changed() {
        println!("nothing to change");
    }
    Ok(())
}

/// Runs `export`: the file, to `--out` or standard output.
pub async fn export_main(args: ExportArgs) -> anyhow::Result<()> {
    let server = Server::new(&args.server)?;
    let file = export(&server).await?;
    let text = format!(
        "# waiting-room-client export of {}\n{}",
        args.server.url,
        yaml_serde::to_string(&file)?
    );
    match &args.out {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

/// A shows file from its text (YAML; JSON is YAML too): each show's settings read as the
/// server's type, so a misspelt setting is named here, before anything is sent.
pub fn parse(text: &str) -> anyhow::Result<ShowsFile> {
    let file: ShowsFile = yaml_serde::from_str(text)?;
    for show in file.shows.keys().chain(file.codes.keys()) {
        if show.parse::<waiting_room::model::ShowId>().is_err() {
            bail!("{show:?} is not a show id (1 to 64 of A-Z a-z 0-9 . _ -)");
        }
    }
    Ok(file)
}

/// Makes the server match `file` (or, `dry_run`, only works out what that would take).
pub async fn apply(server: &Server, file: &ShowsFile, dry_run: bool) -> anyhow::Result<Applied> {
    let mut applied = Applied::default();
    for (show, wants) in &file.shows {
        let change = match server.settings(show).await? {
            None => Change::Create(Box::new(wants.clone())),
            Some(has) => {
                let (has, wants) = (fields(&has), fields(wants));
                let differ: Vec<(String, Option<Value>, Value)> = wants
                    .into_iter()
                    .filter(|(name, value)| !same(name, has.get(name), value))
                    .map(|(name, value)| (name.clone(), has.get(&name).cloned(), value))
                    .collect();
                if differ.is_empty() {
                    Change::Same
                } else {
                    Change::Update(differ)
                }
            }
        };
        if !dry_run {
            match &change {
                Change::Create(settings) => {
                    server
                        .send(Method::PUT, &routes::show(routes::SHOW, show), settings)
                        .await
                        .with_context(|| format!("{show}: not made"))?;
                }
                Change::Update(fields) => {
                    let patch: Map<String, Value> = fields
                        .iter()
                        .map(|(name, _, value)| (name.clone(), value.clone()))
                        .collect();
                    server
                        .send(Method::PUT, &routes::show(routes::CONFIG, show), &patch)
                        .await
                        .with_context(|| format!("{show}: not changed"))?;
                }
                Change::Same => {}
            }
        }
        applied.changes.push((show.clone(), change));
    }
    // Codes, once every show is made: a file each, read whole before anything is sent.
    for (show, path) in &file.codes {
        let csv = std::fs::read(path)
            .with_context(|| format!("{show}: cannot read codes {}", path.display()))?;
        let sent = if dry_run {
            None
        } else {
            Some(
                server
                    .add_codes(show, csv)
                    .await
                    .with_context(|| format!("{show}: codes from {} not sent", path.display()))?,
            )
        };
        applied.codes.push(CodesSent {
            show: show.clone(),
            file: path.clone(),
            counts: sent,
        });
    }
    applied.left_alone = server
        .shows()
        .await?
        .into_iter()
        .filter(|s| !file.shows.contains_key(s))
        .collect();
    Ok(applied)
}

/// The server's shows as a file.
pub async fn export(server: &Server) -> anyhow::Result<ShowsFile> {
    let mut file = ShowsFile::default();
    for show in server.shows().await? {
        // A show deleted meanwhile is not in the file.
        if let Some(settings) = server.settings(&show).await? {
            file.shows.insert(show, settings);
        }
    }
    Ok(file)
}

/// Settings as their JSON fields.
fn fields(settings: &ShowSettings) -> Map<String, Value> {
    match serde_json::to_value(settings) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Whether the server's `has` is what the file `wants` for the setting `name`: equal, or
/// an empty schedule where none is kept, or the same instant spelled another way.
fn same(name: &str, has: Option<&Value>, wants: &Value) -> bool {
    match (has, wants) {
        (Some(h), w) if h == w => true,
        (None, Value::Array(w)) if name == "events" => w.is_empty(),
        (Some(Value::String(h)), Value::String(w)) if name == "opensAt" => {
            let instant = |t: &str| t.parse::<jiff::Timestamp>().ok();
            instant(h).is_some() && instant(h) == instant(w)
        }
        _ => false,
    }
}

/// A waiting-room server, as the operator reaches it.
pub struct Server {
    url: reqwest::Url,
    token: String,
    client: reqwest::Client,
}

impl Server {
    /// The server `args` names.
    pub fn new(args: &ServerArgs) -> anyhow::Result<Server> {
        Ok(Server {
            url: args.url.clone(),
            token: args.admin_token.clone(),
            client: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()?,
        })
    }

    /// A request to `path` with the operator token.
    pub(crate) fn request(
        &self,
        method: Method,
        path: &str,
    ) -> anyhow::Result<reqwest::RequestBuilder> {
        let url = self.url.join(path)?;
        Ok(self.client.request(method, url).bearer_auth(&self.token))
    }

    /// Every show's id.
    async fn shows(&self) -> anyhow::Result<Vec<String>> {
        let r = self.request(Method::GET, routes::SHOWS)?.send().await?;
        Ok(answer(r).await?.json::<ShowList>().await?.shows)
    }

    /// A show's settings as the server keeps them, the fair start's (kept with the show's
    /// draw, `GET …/draw`) included while it is still to come; `None`: no such show.
    pub(crate) async fn settings(&self, show: &str) -> anyhow::Result<Option<ShowSettings>> {
        let r = self
            .request(Method::GET, &routes::show(routes::STATS, show))?
            .send()
            .await?;
        if r.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let mut settings = answer(r).await?.json::<ShowStats>().await?.settings;
        let r = self
            .request(Method::GET, &routes::show(routes::DRAW, show))?
            .send()
            .await?;
        if r.status() != StatusCode::NOT_FOUND {
            let draw: DrawView = answer(r).await?.json().await?;
            // A fair start that has begun is history, no longer a setting.
            if draw.state == DrawStage::Scheduled {
                settings.opens_at = Some(draw.opens_at);
                settings.draw_beacon = draw.beacon;
            }
        }
        Ok(Some(settings))
    }

    /// Sends `csv` as `show`'s access codes: how many were added, and held already. Lines the
    /// server refused are an error, naming the first.
    async fn add_codes(&self, show: &str, csv: Vec<u8>) -> anyhow::Result<(u64, u64)> {
        let r = self
            .request(Method::POST, &routes::show(routes::CODES, show))?
            .header("content-type", "text/csv")
            .body(csv)
            .send()
            .await?;
        let report: Value = answer(r).await?.json().await?;
        let count = |name: &str| report[name].as_u64().unwrap_or(0);
        if count("refusedCount") > 0 {
            let first = &report["refused"][0];
            bail!(
                "{} lines refused (line {}: {}); the other codes were added",
                count("refusedCount"),
                first["line"],
                first["why"].as_str().unwrap_or("")
            );
        }
        Ok((count("added"), count("alreadyHeld")))
    }

    /// Sends `body` with `method` to `path`; the server's refusal, in its words, is an error.
    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        body: &impl Serialize,
    ) -> anyhow::Result<()> {
        let r = self.request(method, path)?.json(body).send().await?;
        answer(r).await?;
        Ok(())
    }
}

/// `r` when it succeeded; else an error with its status and the server's words.
pub(crate) async fn answer(r: reqwest::Response) -> anyhow::Result<reqwest::Response> {
    let status = r.status();
    if status.is_success() {
        return Ok(r);
    }
    let body = r.text().await.unwrap_or_default();
    let words = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_owned))
        .unwrap_or(body);
    bail!("{status}: {words}")
}
