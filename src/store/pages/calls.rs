//! [`Pages`] as the store calls them (on Redis and on the embedded store alike):
//! `set_page.lua` and `page.lua`, per-show scripts as every other. Files travel as base64:
//! the scripts pass JSON.

use std::sync::LazyLock;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use redis::aio::ConnectionLike;
use serde::Deserialize;

use super::{Pages, StoredPage};
use crate::model::ShowId;
use crate::store::redis::{RedisStore, ShowScript, show_script};
use crate::store::{Result, StoreError};

static SET_PAGE: LazyLock<ShowScript> = show_script!("set_page");
static PAGE: LazyLock<ShowScript> = show_script!("page");

/// `set_page.lua`'s own arguments: the page, or nothing to remove it.
#[derive(serde::Serialize)]
struct SetArgs<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    doc: Option<&'a str>,
    version: &'a str,
    files: Vec<FileArgs>,
}

#[derive(serde::Serialize)]
struct FileArgs {
    hash: String,
    body: String,
}

/// `page.lua`'s own arguments.
#[derive(serde::Serialize)]
struct PageArgs<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
}

#[derive(Debug, Deserialize)]
struct SetReply {
    had: bool,
}

#[derive(Debug, Deserialize)]
struct PageReply {
    doc: Option<String>,
    version: Option<String>,
    file: Option<String>,
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Pages for RedisStore<C> {
    async fn set_page(&self, show: &ShowId, page: &StoredPage) -> Result<()> {
        let args = SetArgs {
            doc: Some(&page.doc),
            version: &page.version,
            files: page
                .files
                .iter()
                .map(|(hash, bytes)| FileArgs {
                    hash: hash.clone(),
                    body: STANDARD.encode(bytes),
                })
                .collect(),
        };
        let _: SetReply = self.run(&SET_PAGE, show, &args).await?;
        Ok(())
    }

    async fn page(&self, show: &ShowId) -> Result<Option<StoredPage>> {
        let r: PageReply = self.run(&PAGE, show, &PageArgs { file: None }).await?;
        Ok(r.doc.map(|doc| StoredPage {
            doc,
            version: r.version.unwrap_or_default(),
            files: Vec::new(),
        }))
    }

    async fn page_file(&self, show: &ShowId, hash: &str) -> Result<Option<Vec<u8>>> {
        let r: PageReply = self
            .run(&PAGE, show, &PageArgs { file: Some(hash) })
            .await?;
        r.file
            .map(|body| {
                STANDARD
                    .decode(body)
                    .map_err(|e| StoreError::Protocol(format!("page file: {e}")))
            })
            .transpose()
    }

    async fn delete_page(&self, show: &ShowId) -> Result<bool> {
        let args = SetArgs {
            doc: None,
            version: "",
            files: Vec::new(),
        };
        let r: SetReply = self.run(&SET_PAGE, show, &args).await?;
        Ok(r.had)
    }
}
