//! `REDIS_WAIT_REPLICAS`: every script's writes confirmed by replicas before it answers, at
//! one `WAIT` per batch rather than per fan. Scripts go to one task that gathers whatever is
//! pending (up to [`MAX_BATCH`]) into one pipeline, the scripts then `WAIT`, on one
//! connection: `WAIT` covers every write that connection sent before it, so the one answer
//! confirms (or not) the whole batch. While a batch is out the next gathers, so under load a
//! batch is as big as the joins that arrive in one round trip (group commit).

use std::sync::Arc;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisError, Script, ServerError, ServerErrorKind, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::TaskTracker;

use super::Durability;
use super::functions::{self, Loader};
use crate::store::{Result, StoreError};

/// What to load when Redis answers that it lacks what a call ran: the script (by SHA), or the
/// library of functions.
#[derive(Clone)]
pub(super) enum Reload {
    Script(Script),
    Library(Loader),
}

impl Reload {
    /// Loads it where `conn` reaches (the library: where its loader reaches).
    pub(super) async fn load<C: ConnectionLike>(&self, conn: &mut C) -> Result<()> {
        match self {
            Reload::Script(script) => {
                script.load_async(conn).await?;
                Ok(())
            }
            Reload::Library(load) => load().await,
        }
    }
}

/// Whether Redis answered that it lacks the script or the function called.
pub(super) fn is_missing(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) || functions::is_missing(e)
}

/// The same, for an error in a pipeline's replies.
fn is_missing_reply(e: &ServerError) -> bool {
    e.kind() == Some(ServerErrorKind::NoScript) || functions::is_missing_reply(e)
}

/// The most scripts one `WAIT` confirms.
pub(super) const MAX_BATCH: usize = 512;

/// Where scripts wait to be sent and confirmed.
pub(super) struct Confirmer {
    jobs: mpsc::UnboundedSender<Job>,
}

struct Job {
    reload: Reload,
    cmd: Cmd,
    reply: oneshot::Sender<Result<Value>>,
}

impl Confirmer {
    /// The task that sends and confirms on `conn`; it ends when the store is dropped.
    pub(super) fn start<C>(conn: C, durability: Durability, tasks: &TaskTracker) -> Arc<Confirmer>
    where
        C: ConnectionLike + Clone + Send + Sync + 'static,
    {
        let (jobs, rx) = mpsc::unbounded_channel();
        tasks.spawn(run(conn, durability, rx));
        Arc::new(Confirmer { jobs })
    }

    /// Sends `cmd` (an `EVALSHA` or `FCALL` of what `reload` loads) in the next batch; its
    /// answer once the replicas confirmed the batch, else [`StoreError::NotReplicated`].
    pub(super) async fn send(&self, reload: Reload, cmd: Cmd) -> Result<Value> {
        let (reply, answer) = oneshot::channel();
        let job = Job { reload, cmd, reply };
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Protocol("the write confirmer stopped".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Protocol("the write confirmer dropped a write".into()))?
    }
}

async fn run<C>(mut conn: C, durability: Durability, mut jobs: mpsc::UnboundedReceiver<Job>)
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    while let Some(first) = jobs.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        // A script or library Redis no longer holds (a restart, a failover) is loaded and its
        // job sent again, once; the library once for the whole batch.
        let again = send_batch(&mut conn, durability, batch).await;
        if !again.is_empty() {
            let mut library_loaded = false;
            for job in &again {
                if let Reload::Library(_) = job.reload {
                    if library_loaded {
                        continue;
                    }
                    library_loaded = true;
                }
                if let Err(e) = job.reload.load(&mut conn).await {
                    tracing::debug!(error = %e, "could not load a script");
                }
            }
            for job in send_batch(&mut conn, durability, again).await {
                let _ = job.reply.send(Err(StoreError::Protocol(
                    "a script Redis would not load".into(),
                )));
            }
        }
    }
}

/// Sends `batch` and `WAIT`, and answers every job; the jobs whose script was missing come
/// back unanswered.
async fn send_batch<C: ConnectionLike>(
    conn: &mut C,
    durability: Durability,
    batch: Vec<Job>,
) -> Vec<Job> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for job in &batch {
        pipe.add_command(job.cmd.clone());
    }
    pipe.cmd("WAIT")
        .arg(durability.replicas)
        .arg(durability.timeout.as_millis() as u64);
    let answered: redis::RedisResult<Vec<Value>> = pipe.query_async(conn).await;
    let mut values = match answered {
        Ok(values) if values.len() == batch.len() + 1 => values,
        Ok(values) => {
            let e = format!("{} answers to {} commands", values.len(), batch.len() + 1);
            for job in batch {
                let _ = job.reply.send(Err(StoreError::Protocol(e.clone())));
            }
            return Vec::new();
        }
        Err(e) => {
            for job in batch {
                let _ = job.reply.send(Err(StoreError::Redis(e.clone())));
            }
            return Vec::new();
        }
    };
    let acked = match values.pop() {
        Some(Value::Int(n)) => u32::try_from(n).unwrap_or(0),
        _ => 0,
    };
    let mut missing = Vec::new();
    for (job, value) in batch.into_iter().zip(values) {
        let answer = match value {
            Value::ServerError(e) if is_missing_reply(&e) => {
                missing.push(job);
                continue;
            }
            Value::ServerError(e) => Err(StoreError::Redis(e.into())),
            _ if acked < durability.replicas => Err(StoreError::NotReplicated {
                acked,
                wanted: durability.replicas,
            }),
            value => Ok(value),
        };
        let _ = job.reply.send(answer);
    }
    missing
}
