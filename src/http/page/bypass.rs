//! `GET /wait/{showId}/bypass?link=…`: the waiting page's way through for support staff
//! (docs/bypass.md): a link an operator signed, used once. Admitted at once, the fan is sent on
//! to the waiting page, which shows its admission. Only a link: a page of another site could
//! make a staff browser open this address, and every time take a seat, if the browser's
//! network were enough (a staff network goes through `POST …/bypass`).

use std::net::SocketAddr;

use axum::extract::rejection::PathRejection;
use axum::extract::{ConnectInfo, Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{PAGE_CACHE, error_page, page_show};
use crate::error::AppError;
use crate::http::AppState;
use crate::http::bypass::{Asking, bypass_token, let_through};
use crate::http::credentials::{set_ticket_cookie, ticket_cookie};
use crate::model::TicketState;

/// A link's token in `query` (`link=…`), if any.
fn link_of(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("link="))
        .filter(|link| !link.is_empty())
}

/// `GET /wait/{showId}/bypass?link=…`: 303 to the waiting page with the admitted ticket (its
/// cookie set; a browser holding a running admission of the show keeps it); the page's 403
/// without a link the show takes.
#[utoipa::path(
    get,
    path = crate::protocol::routes::WAIT_BYPASS,
    operation_id = "waitBypass",
    tag = crate::http::openapi::PAGES,
    summary = "Support staff through the queue: a link the operator signed, used once",
    params(
        crate::http::openapi::params::ShowPath,
        ("link" = Option<String>, Query, description = "A link's token, as the operator's `POST …/bypass-links` signed it"),
    ),
    responses(
        (status = 303, description = "Admitted: on to the waiting page"),
        (status = 400, description = "A bad showId, or a token in the URL", body = String, content_type = "text/html"),
        (status = 403, description = "No link, or one the show does not take (forged, expired, used, voided)", body = String, content_type = "text/html"),
        (status = 404, description = "No such show", body = String, content_type = "text/html"),
        (status = 409, description = "The on-sale is not open, or no seat is left", body = String, content_type = "text/html"),
        (status = 429, description = "Too many refused bypasses from this client's block", body = String, content_type = "text/html"),
        (
            status = 503,
            description = crate::http::openapi::PAGE_UNAVAILABLE,
            content(
                (String = "text/html"),
                (crate::protocol::ErrorBody = "application/problem+json"),
            ),
        ),
    ),
)]
pub(crate) async fn bypass(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    show: Result<Path<String>, PathRejection>,
) -> Response {
    let through = async {
        let show = page_show(show)?;
        bypass_token(&headers, query.as_deref())?;
        let Some(link) = link_of(query.as_deref()) else {
            return Err(AppError::Forbidden(
                "the way through for staff is a link the operator signed (…/bypass?link=…)".into(),
            ));
        };
        // A browser that holds a running admission of this show keeps it: opening the link
        // again takes no second seat.
        if let Some(held) = ticket_cookie(&headers) {
            let status = state.store.status(&show, held).await?;
            if matches!(status.state, TicketState::Admitted { .. }) {
                return Ok((show, held));
            }
        }
        let asking = Asking {
            peer: peer.ip(),
            client: state.client_ip(peer.ip(), &headers),
            token: None,
            link: Some(link),
            idem_key: None,
        };
        let (ticket, _, _) = let_through(&state, &show, asking).await?;
        Ok::<_, AppError>((show, ticket))
    };
    match through.await {
        Ok((show, ticket)) => {
            let cookie = set_ticket_cookie(&show, Some(ticket), state.public_https());
            (
                StatusCode::SEE_OTHER,
                [
                    (header::LOCATION, format!("/wait/{show}?ticket={ticket}")),
                    (header::SET_COOKIE, cookie),
                    (header::CACHE_CONTROL, PAGE_CACHE.to_owned()),
                    // The link's token is in this URL: no page after it names it.
                    (header::REFERRER_POLICY, "no-referrer".to_owned()),
                ],
            )
                .into_response()
        }
        Err(e) => error_page(e, &headers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_is_read_from_its_own_parameter() {
        assert_eq!(link_of(Some("link=b1.k.s.5.r.m")), Some("b1.k.s.5.r.m"));
        assert_eq!(link_of(Some("x=1&link=abc")), Some("abc"));
        assert_eq!(link_of(Some("link=")), None);
        assert_eq!(link_of(Some("blink=abc")), None);
        assert_eq!(link_of(None), None);
    }
}
