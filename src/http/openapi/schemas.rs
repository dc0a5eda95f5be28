//! The document's component schemas: the contract's types, derived, and the few shapes no
//! type names.

use std::collections::HashSet;

use utoipa::ToSchema;
use utoipa::openapi::schema::{AllOf, Array, SchemaType, Type};
use utoipa::openapi::{RefOr, Schema};

use super::build::{integer, object, reference, show_id_chars, string};

use crate::model::{
    AuditPage, DrawView, Order, OrderRequest, Redemption, ShowSettings, ShowStats, TicketStatus,
};
use crate::protocol::{Challenge, EndRequest, ErrorBody, EventName, Frame, TicketView};

/// Every component schema: the contract's types, and the few shapes no type names.
pub(super) fn schemas() -> Vec<(String, RefOr<Schema>)> {
    fn add<T: ToSchema>(all: &mut Vec<(String, RefOr<Schema>)>) {
        all.push((T::name().into_owned(), T::schema()));
        T::schemas(all);
    }
    let mut all = Vec::new();
    add::<TicketView>(&mut all);
    add::<TicketStatus>(&mut all);
    add::<EventName>(&mut all);
    add::<Frame>(&mut all);
    add::<ErrorBody>(&mut all);
    add::<ShowStats>(&mut all);
    add::<ShowSettings>(&mut all);
    add::<EndRequest>(&mut all);
    add::<OrderRequest>(&mut all);
    add::<Order>(&mut all);
    add::<Redemption>(&mut all);
    add::<DrawView>(&mut all);
    add::<AuditPage>(&mut all);
    add::<Challenge>(&mut all);
    let show_id = string(None)
        .pattern(Some(format!("^{}$", show_id_chars())))
        .description(Some("A show id: 1 to 64 of A-Z, a-z, 0-9, `.`, `_`, `-`"));
    let unknown = serde_json::to_value(TicketStatus::Unknown).expect("a status serialises");
    let unknown_ticket = object()
        .description(Some(
            "A ticket nobody holds: its id as it was sent, and `UNKNOWN`",
        ))
        .property("ticketId", string(None))
        .property("status", string(None).enum_values(Some([unknown])))
        .required("ticketId")
        .required("status");
    let nullable = SchemaType::from_iter([Type::Integer, Type::Null]);
    let per_show = object()
        .property(
            "connectedFans",
            integer(0).description(Some("Fans following its tickets on this instance")),
        )
        .property(
            "admittedSinceLast",
            (integer(0).schema_type(nullable))
                .description(Some("Admitted since the last sample; null while unknown")),
        )
        .required("connectedFans");
    let shows = AllOf::builder()
        .item(reference(&ShowStats::name()))
        .item(per_show);
    let sample = object()
        .description(Some("One sample of the operator's stream (event `stats`)"))
        .property(
            "at",
            integer(0).description(Some("The server's clock, ms since the epoch")),
        )
        .property("shows", Array::new(shows))
        .required("at")
        .required("shows");
    all.push(("ShowId".into(), show_id.into()));
    all.push(("UnknownTicket".into(), unknown_ticket.into()));
    all.push(("StatsSample".into(), sample.into()));
    // A type brings the types it names along (the stats bring the settings), so a schema may
    // come more than once: each is kept as first met, and that one is narrowed. A later copy
    // left in would be the one served, without its bounds.
    let mut seen = HashSet::new();
    all.retain(|(name, _)| seen.insert(name.clone()));
    super::bounds::narrow(&mut all);
    all
}
