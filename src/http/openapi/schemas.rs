//! The document's component schemas: the contract's types, derived, and the few shapes no
//! type names; and the small schemas the rest of the document is made of.

use utoipa::ToSchema;
use utoipa::openapi::schema::{
    AllOf, Array, KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr, Schema};

use crate::http::operator::{EndRequest, ShowConfig};
use crate::model::{AuditPage, DrawView, Order, OrderRequest, Redemption, ShowStats, TicketStatus};
use crate::protocol::{Challenge, ErrorBody, EventName, Frame, TicketView};

/// The alphabet of a show id, as [`crate::model::ShowId`] checks it.
pub(super) const SHOW_ID_PATTERN: &str = "^[A-Za-z0-9._-]{1,64}$";

pub(super) fn string(format: Option<KnownFormat>) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(format.map(SchemaFormat::KnownFormat))
}

pub(super) fn integer(minimum: i64) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(minimum))
}

pub(super) fn object() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::Object)
}

pub(super) fn ref_path(schema: &str) -> String {
    format!("#/components/schemas/{schema}")
}

pub(super) fn reference(schema: &str) -> RefOr<Schema> {
    Ref::from_schema_name(schema).into()
}

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
    add::<ShowConfig>(&mut all);
    add::<EndRequest>(&mut all);
    add::<OrderRequest>(&mut all);
    add::<Order>(&mut all);
    add::<Redemption>(&mut all);
    add::<DrawView>(&mut all);
    add::<AuditPage>(&mut all);
    add::<Challenge>(&mut all);
    let show_id = string(None)
        .pattern(Some(SHOW_ID_PATTERN))
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
    all
}
