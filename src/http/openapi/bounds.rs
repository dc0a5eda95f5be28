//! What the server checks of a request body beyond its types, said in the body's schema from
//! the constants it checks with: the ranges of a show's settings, the shape of an order, an
//! end's reason. What no schema can say (a time in the future, two fields that go together, a
//! length in bytes after trimming) stays in the fields' descriptions.

use utoipa::ToSchema;
use utoipa::openapi::schema::{AnyOf, KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};

use super::build::{any_case, integer, reference, string};
use crate::model::{
    MAX_ACTIVE_BUYERS, MAX_AMOUNT, MAX_ARRIVAL_WINDOW, MAX_BEACON, MAX_BEACON_VALUE,
    MAX_CHALLENGE_BITS, MAX_HEALTH_URL, MAX_RATE, MAX_STOCK, MIN_ARRIVAL_WINDOW, OrderRequest,
    ShowSettings,
};
use crate::protocol::EndRequest;

/// Control characters, which an end's reason may not hold (ECMA-262 and Python alike read
/// `\uXXXX`).
const CONTROL: &str = "\\u0000-\\u001F\\u007F-\\u009F";

/// Narrows the body schemas among `all` to what the server accepts.
pub(super) fn narrow(all: &mut [(String, RefOr<Schema>)]) {
    let config = ShowSettings::name();
    let rate = || integer(1).maximum(Some(MAX_RATE));
    let mut set = |schema: &str, name: &str, to: RefOr<Schema>| replace(all, schema, name, to);
    set(&config, "admitPerSecond", nullable(rate()));
    set(&config, "minAdmitPerSecond", nullable(rate()));
    set(&config, "rateChangeTo", nullable(rate()));
    let cap = integer(0).maximum(Some(MAX_ACTIVE_BUYERS));
    set(&config, "maxActiveBuyers", nullable(cap));
    let bits = integer(0).maximum(Some(MAX_CHALLENGE_BITS));
    set(&config, "joinChallengeBits", nullable(bits));
    set(
        &config,
        "stock",
        nullable(integer(0).maximum(Some(MAX_STOCK))),
    );
    // 0 (off), or from the shortest window to a day.
    let window = AnyOf::builder()
        .item(integer(0).maximum(Some(0)))
        .item(
            integer(MIN_ARRIVAL_WINDOW.as_secs() as i64)
                .maximum(Some(MAX_ARRIVAL_WINDOW.as_secs())),
        )
        .item(null());
    set(&config, "arrivalWindowSeconds", window.into());
    // A URL (the scheme in any case, as the URL parser reads it), or `""`, which stops
    // following one.
    let scheme = format!("{}://", any_case("http"));
    let rest = MAX_HEALTH_URL - "http://".len();
    // (`uri` is a JSON Schema format the crate names only with a feature this build leaves out.)
    let url = string(None)
        .format(Some(SchemaFormat::Custom("uri".into())))
        .pattern(Some(format!("^{scheme}[^\\s]{{1,{rest}}}$")))
        .max_length(Some(MAX_HEALTH_URL))
        .examples(["http://shop.internal/health"]);
    let health = AnyOf::builder()
        .item(string(None).max_length(Some(0)))
        .item(url)
        .item(null());
    set(&config, "checkoutHealthUrl", health.into());
    set(
        &config,
        "opensAt",
        nullable(string(Some(KnownFormat::DateTime))),
    );
    // `""` withdraws the change.
    let change_at = AnyOf::builder()
        .item(string(None).max_length(Some(0)))
        .item(string(Some(KnownFormat::DateTime)))
        .item(null());
    set(&config, "rateChangeAt", change_at.into());
    let printable = |most: usize| {
        string(None)
            .pattern(Some(format!("^[ -~]{{1,{most}}}$")))
            .min_length(Some(1))
            .max_length(Some(most))
    };
    let beacon = printable(MAX_BEACON).examples(["drand quicknet round 12345678"]);
    set(&config, "drawBeacon", nullable(beacon));
    set(
        &config,
        "drawBeaconValue",
        nullable(printable(MAX_BEACON_VALUE)),
    );

    // The reason is trimmed, then may hold no control character (and at most
    // `EndReason::MAX` bytes, which a pattern cannot count).
    let visible = format!("[^\\s{CONTROL}]");
    let reason = string(None).pattern(Some(format!(
        "^\\s*{visible}(?:[^{CONTROL}]*{visible})?\\s*$"
    )));
    set(&EndRequest::name(), "reason", nullable(reason));

    let order = OrderRequest::name();
    set(&order, "showId", reference("ShowId"));
    // Trimmed: something that is not a space.
    set(&order, "holdId", string(None).pattern(Some("\\S")).into());
    let email = "^\\s*[^\\s@]+@[^\\s@.][^\\s@]*\\.[^\\s@]*[^\\s@.]\\s*$";
    set(
        &order,
        "customerEmail",
        string(None).pattern(Some(email)).into(),
    );
    let amount = ObjectBuilder::new()
        .schema_type(Type::Number)
        .exclusive_minimum(Some(0))
        .maximum(Some(MAX_AMOUNT));
    set(&order, "amount", amount.into());
}

/// `schema` or JSON `null` (a field the body may leave out, or send as `null`).
fn nullable(schema: ObjectBuilder) -> RefOr<Schema> {
    AnyOf::builder().item(schema).item(null()).into()
}

fn null() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::Null)
}

/// Replaces the property `name` of the object component `schema` with `to`, which keeps the
/// description the field's doc comment gave it.
fn replace(all: &mut [(String, RefOr<Schema>)], schema: &str, name: &str, to: RefOr<Schema>) {
    let object = all
        .iter_mut()
        .find(|(n, _)| n == schema)
        .and_then(|(_, s)| match s {
            RefOr::T(Schema::Object(o)) => Some(o),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no object schema {schema}"));
    let slot = object
        .properties
        .get_mut(name)
        .unwrap_or_else(|| panic!("{schema} has no {name}"));
    let about = match slot {
        RefOr::T(Schema::Object(o)) => o.description.clone(),
        _ => None,
    };
    *slot = match (to, about) {
        (RefOr::T(Schema::Object(mut o)), Some(about)) => {
            o.description = Some(about);
            RefOr::T(Schema::Object(o))
        }
        (RefOr::T(Schema::AnyOf(mut any)), Some(about)) => {
            any.description = Some(about);
            RefOr::T(Schema::AnyOf(any))
        }
        (RefOr::Ref(mut r), Some(about)) => {
            r.description = about;
            RefOr::Ref(r)
        }
        (to, _) => to,
    };
}
