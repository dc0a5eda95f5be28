//! `GET …/{showId}/report` (operator): the on-sale's report (docs/report.md) as HTML with its
//! plots drawn on the server (no script: readable as a table without JavaScript), as JSON or
//! as CSV, by `?format=` or else the `Accept` header.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::page::asset_version;
use super::{AppPath, AppState, Operator, preferred, show_id};
use crate::clock::wall_ms;
use crate::error::AppError;
use crate::model::Report;
use crate::protocol::routes;
use crate::report::{Links, csv, gather, html};

/// `?format=`: what the report is answered as.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Format {
    Html,
    Json,
    Csv,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReportQuery {
    format: Option<Format>,
}

/// The format a request asks for: `?format=`, else the one of JSON, CSV or HTML its `Accept`
/// ranks first (HTML when it names none).
fn asked(query: Option<Format>, headers: &HeaderMap) -> Format {
    const MEDIA: [(&str, Format); 3] = [
        ("application/json", Format::Json),
        ("text/csv", Format::Csv),
        ("text/html", Format::Html),
    ];
    query.unwrap_or_else(|| {
        let best = preferred(headers, &MEDIA.map(|(media, _)| media));
        MEDIA
            .into_iter()
            .find(|(media, _)| Some(*media) == best)
            .map_or(Format::Html, |(_, format)| format)
    })
}

#[utoipa::path(
    get,
    path = crate::protocol::routes::REPORT,
    operation_id = "showReport",
    tag = crate::http::openapi::OPERATOR,
    summary = "The on-sale's report, during or after it: arrivals, the queue, admissions and \
         orders a second, presence, the ETA told against the real wait, push latency, stock, and \
         the audit's fairness figures; HTML (plots and tables, no script), JSON or CSV",
    params(crate::http::openapi::params::ShowPath, crate::http::openapi::params::ReportFormat),
    responses(
        (
            status = 200,
            description = "The report, as asked",
            content(
                (Report = "application/json"),
                (String = "text/html"),
                (String = "text/csv"),
            ),
        ),
        (
            status = 400,
            description = "`format` is not `html`, `json` or `csv`",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
        (status = 503, description = crate::http::openapi::LOST, body = crate::protocol::ErrorBody),
    ),
)]
pub(super) async fn report(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    query: Result<Query<ReportQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let show = show_id(&show)?;
    let Query(q) = query.map_err(|e| AppError::BadRequest(format!("report query: {e}")))?;
    let format = asked(q.format, &headers);
    let report = gather(
        state.store.as_ref(),
        &show,
        state.metrics.push_latency(),
        wall_ms(),
    )
    .await?;
    let private = (header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(match format {
        Format::Json => ([private], Json(report)).into_response(),
        Format::Csv => (
            [
                private,
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/csv; charset=utf-8"),
                ),
            ],
            csv(&report),
        )
            .into_response(),
        Format::Html => {
            let css = format!("{}/report.css?v={}", routes::STATIC, asset_version());
            let here = routes::show(routes::REPORT, show.as_str());
            let (json, csv_href) = (format!("{here}?format=json"), format!("{here}?format=csv"));
            let links = Links {
                css: &css,
                json: &json,
                csv: &csv_href,
            };
            (
                [
                    private,
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/html; charset=utf-8"),
                    ),
                    (
                        header::CONTENT_SECURITY_POLICY,
                        HeaderValue::from_static(REPORT_CSP),
                    ),
                ],
                html(&report, &links),
            )
                .into_response()
        }
    })
}

/// The report's page runs no script and loads nothing but its stylesheet.
const REPORT_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn the_query_wins_then_the_first_media_accept_names() {
        assert_eq!(
            asked(Some(Format::Csv), &accept("application/json")),
            Format::Csv
        );
        assert_eq!(asked(None, &accept("application/json")), Format::Json);
        assert_eq!(
            asked(None, &accept("text/csv, application/json")),
            Format::Csv
        );
        assert_eq!(
            asked(None, &accept("text/html,application/xhtml+xml,*/*;q=0.8")),
            Format::Html
        );
        assert_eq!(
            asked(None, &accept("text/html;q=0.5, application/json")),
            Format::Json,
            "by quality before place"
        );
        assert_eq!(
            asked(None, &accept("text/csv;q=0, text/html")),
            Format::Html
        );
        assert_eq!(asked(None, &accept("*/*")), Format::Html);
        assert_eq!(asked(None, &HeaderMap::new()), Format::Html);
    }
}
