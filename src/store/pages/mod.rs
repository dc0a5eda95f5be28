//! A show's own waiting page (docs/pages.md): the shop's template, its words for each
//! language, and the files it shows (a logo, a style sheet), kept whole with the show as one
//! document and the files by their hash. Every instance renders from it, so a page set on
//! one is shown by all; an instance keeps what it read until the show's meta names another
//! version (`page` in [`crate::store::ShowMeta`]).

mod calls;

use async_trait::async_trait;

use super::Result;
use crate::model::ShowId;

/// A page as it is kept: its document (JSON, as `http/page` writes and reads it), the
/// version every instance compares, and its files by hash.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredPage {
    /// The page's document: template, words, the names of its files.
    pub doc: String,
    /// A hash of the whole page, files included.
    pub version: String,
    /// Each file: its hash and its bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

/// A show's own waiting page.
#[async_trait]
pub trait Pages: Send + Sync {
    /// Sets the show's page, in one step, replacing the one it had (its files too). The
    /// show must exist.
    async fn set_page(&self, show: &ShowId, page: &StoredPage) -> Result<()>;
    /// The show's page, without its files (`files` empty); `None` when it has none.
    async fn page(&self, show: &ShowId) -> Result<Option<StoredPage>>;
    /// One file of the show's page, by hash.
    async fn page_file(&self, show: &ShowId, hash: &str) -> Result<Option<Vec<u8>>>;
    /// Removes the show's page: its waiting page is the built-in one again. Whether it had
    /// one.
    async fn delete_page(&self, show: &ShowId) -> Result<bool>;
}
