//! A fan's push subscription, as its browser's `PushSubscription.toJSON()` spells it, checked
//! as the hostile input it is.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::PublicKey;
use serde::{Deserialize, Serialize};

use super::Refusal;
use super::guard::Allowed;

/// The longest subscription JSON read.
pub const MAX_SUBSCRIPTION_JSON: usize = 4096;
/// The longest endpoint URL taken, in bytes.
pub const MAX_ENDPOINT: usize = 1024;

/// A checked push subscription: an endpoint on an allowed push service, the browser's P-256
/// public key (`p256dh`) and its 16-byte authentication secret (`auth`). Serialises back to
/// the JSON it was read from (`{"endpoint", "keys": {"p256dh", "auth"}}`), for storing.
#[derive(Clone, Serialize)]
pub struct Subscription {
    endpoint: String,
    keys: Keys,
    #[serde(skip)]
    public: PublicKey,
    #[serde(skip)]
    auth: [u8; 16],
}

#[derive(Clone, Serialize, Deserialize)]
struct Keys {
    p256dh: String,
    auth: String,
}

/// The JSON read, before its checks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    endpoint: String,
    keys: Keys,
    // `toJSON()` writes it (null, or Unix milliseconds); read and not used.
    #[serde(default)]
    #[allow(dead_code)]
    expiration_time: Option<serde_json::Value>,
}

impl Subscription {
    /// The endpoint URL (a capability: never log it whole).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The browser's public key.
    pub(crate) fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The browser's authentication secret.
    pub(crate) fn auth(&self) -> &[u8; 16] {
        &self.auth
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The endpoint's path is the capability to push to the fan: only its origin shows.
        let origin = self
            .endpoint
            .parse::<hyper::Uri>()
            .ok()
            .and_then(|u| u.authority().map(|a| a.to_string()))
            .unwrap_or_default();
        write!(f, "Subscription({origin})")
    }
}

/// Checks a subscription's JSON at subscribe time: its shape and bounds, its keys, and its
/// endpoint against the show's allow-list (`push_services`; empty stands for
/// [`DEFAULT_PUSH_SERVICES`](super::DEFAULT_PUSH_SERVICES)). Where the endpoint's name resolves
/// is checked when a call is sent. Each refusal's message is fit for a 400's body.
pub fn check_subscription(json: &[u8], push_services: &[String]) -> Result<Subscription, Refusal> {
    if json.len() > MAX_SUBSCRIPTION_JSON {
        return Err(Refusal::TooLong);
    }
    let raw: Raw = serde_json::from_slice(json).map_err(|e| Refusal::NotJson(e.to_string()))?;
    if raw.endpoint.len() > MAX_ENDPOINT {
        return Err(Refusal::EndpointTooLong);
    }
    Allowed::parse(push_services)?.check(&raw.endpoint)?;
    let p256dh = decode(&raw.keys.p256dh).ok_or(Refusal::BadP256dh)?;
    if p256dh.len() != 65 || p256dh[0] != 0x04 {
        return Err(Refusal::BadP256dh);
    }
    let public = PublicKey::from_sec1_bytes(&p256dh).map_err(|_| Refusal::BadP256dh)?;
    let auth: [u8; 16] = decode(&raw.keys.auth)
        .and_then(|a| a.try_into().ok())
        .ok_or(Refusal::BadAuth)?;
    Ok(Subscription {
        endpoint: raw.endpoint,
        // Kept in one spelling: base64url, unpadded.
        keys: Keys {
            p256dh: URL_SAFE_NO_PAD.encode(&p256dh),
            auth: URL_SAFE_NO_PAD.encode(auth),
        },
        public,
        auth,
    })
}

/// Checks a show's allow-list (`pushServices`) entry by entry, as a setting's check does.
pub fn check_push_services(push_services: &[String]) -> Result<(), Refusal> {
    Allowed::parse(push_services).map(|_| ())
}

/// Base64url, padded or not (browsers write it unpadded), of at most 128 characters.
fn decode(text: &str) -> Option<Vec<u8>> {
    if text.len() > 128 {
        return None;
    }
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real point: the generator's multiple by 2, and a 16-byte secret.
    fn keys() -> (String, String) {
        let secret = p256::SecretKey::from_slice(&[2u8; 32]).unwrap();
        let point = secret.public_key().to_sec1_bytes();
        (
            URL_SAFE_NO_PAD.encode(point),
            URL_SAFE_NO_PAD.encode([9u8; 16]),
        )
    }

    fn json(endpoint: &str, p256dh: &str, auth: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "endpoint": endpoint,
            "expirationTime": null,
            "keys": {"p256dh": p256dh, "auth": auth},
        }))
        .unwrap()
    }

    #[test]
    fn a_browsers_subscription_reads_and_writes_back() {
        let (p, a) = keys();
        let sub = check_subscription(&json("https://fcm.googleapis.com/fcm/send/x", &p, &a), &[])
            .unwrap();
        assert_eq!(sub.endpoint(), "https://fcm.googleapis.com/fcm/send/x");
        assert_eq!(sub.auth(), &[9u8; 16]);
        assert_eq!(sub.public_key().to_sec1_bytes().len(), 65);
        assert_eq!(format!("{sub:?}"), "Subscription(fcm.googleapis.com)");
        let again = serde_json::to_vec(&sub).unwrap();
        let back = check_subscription(&again, &[]).unwrap();
        assert_eq!(back.endpoint(), sub.endpoint());
        // Padded base64url is read too.
        let padded = format!("{a}==");
        assert!(
            check_subscription(&json("https://fcm.googleapis.com/x", &p, &padded), &[]).is_ok()
        );
    }

    #[test]
    fn out_of_bounds_subscriptions_are_refused_by_name() {
        let (p, a) = keys();
        let ok = "https://fcm.googleapis.com/fcm/send/x";
        let long = format!("https://fcm.googleapis.com/{}", "x".repeat(MAX_ENDPOINT));
        let compressed = {
            let secret = p256::SecretKey::from_slice(&[2u8; 32]).unwrap();
            URL_SAFE_NO_PAD.encode(p256::EncodedPoint::from(secret.public_key()).compress())
        };
        let mut off_curve = URL_SAFE_NO_PAD.decode(&p).unwrap();
        off_curve[64] ^= 1;
        let off_curve = URL_SAFE_NO_PAD.encode(off_curve);
        let cases: Vec<(Vec<u8>, Refusal)> = vec![
            (vec![b' '; MAX_SUBSCRIPTION_JSON + 1], Refusal::TooLong),
            (b"{".to_vec(), Refusal::NotJson(String::new())),
            (
                br#"{"endpoint":"https://fcm.googleapis.com/x"}"#.to_vec(),
                Refusal::NotJson(String::new()),
            ),
            (json(&long, &p, &a), Refusal::EndpointTooLong),
            (
                json("http://fcm.googleapis.com/x", &p, &a),
                Refusal::NotHttps,
            ),
            (
                json("https://10.0.0.1/x", &p, &a),
                Refusal::HostNotAllowed("10.0.0.1".into()),
            ),
            (json(ok, "!!!", &a), Refusal::BadP256dh),
            (json(ok, &compressed, &a), Refusal::BadP256dh),
            (json(ok, &off_curve, &a), Refusal::BadP256dh),
            (json(ok, &"A".repeat(200), &a), Refusal::BadP256dh),
            (
                json(ok, &p, &URL_SAFE_NO_PAD.encode([1u8; 15])),
                Refusal::BadAuth,
            ),
            (
                json(ok, &p, &URL_SAFE_NO_PAD.encode([1u8; 17])),
                Refusal::BadAuth,
            ),
        ];
        for (input, want) in cases {
            let got = check_subscription(&input, &[]).unwrap_err();
            match (&got, &want) {
                (Refusal::NotJson(_), Refusal::NotJson(_)) => {}
                _ => assert_eq!(got, want),
            }
            // Each says what is wrong, in words a 400 can carry.
            assert!(!got.to_string().is_empty());
        }
    }

    #[test]
    fn a_shows_own_allow_list_is_used() {
        let (p, a) = keys();
        let list = vec!["push.example.org".to_owned()];
        let sub = json("https://push.example.org/p/1", &p, &a);
        assert!(check_subscription(&sub, &list).is_ok());
        assert!(check_subscription(&sub, &[]).is_err());
        assert!(check_push_services(&list).is_ok());
        assert!(check_push_services(&["*".to_owned()]).is_err());
    }
}
