//! The signed admission pass: what an admitted fan's ticket JSON carries as `"pass"`, and
//! what any service holding a key of `PASS_KEYS` can check without asking the store.
//!
//! Wire format (ASCII, one line, fields split by `:`, none of which can hold a `:`):
//!
//! ```text
//! v1:<kid>:<showId>:<ticketId>:<exp>:<mac>
//! ```
//!
//! - `kid`: the id of the key that signed, `[A-Za-z0-9_-]{1,32}`.
//! - `showId`: `[A-Za-z0-9._-]{1,64}`; `ticketId`: the ticket's UUID, lowercase, hyphenated.
//! - `exp`: when the admission runs out, in whole seconds since the Unix epoch (decimal).
//! - `mac`: base64url without padding (43 characters) of HMAC-SHA256 under the key `kid` of
//!   the exact bytes before the last `:` (`v1:<kid>:<showId>:<ticketId>:<exp>`).
//!
//! A pass is good while `now < exp`. It proves the admission, not that it is unspent: one
//! admission still places one order, which the order book enforces.

use uuid::Uuid;

use super::Keyring;
use crate::model::{ShowId, TicketState, TicketView};

/// The version prefix of every pass this server signs.
pub const PASS_PREFIX: &str = "v1:";

/// An admission, as a valid pass proves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission {
    pub show: ShowId,
    pub ticket: Uuid,
    /// When the admission runs out (seconds since the Unix epoch).
    pub expires_at: u64,
    /// The key that signed it.
    pub kid: String,
}

/// Why a pass was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PassError {
    #[error("the admission pass is malformed (expected v1:kid:showId:ticketId:exp:mac)")]
    Malformed,
    #[error("the admission pass was signed with a key this server does not hold ({0})")]
    UnknownKey(String),
    #[error("the admission pass's signature is wrong")]
    BadSignature,
    #[error("the admission pass ran out; join the queue again")]
    Expired,
    #[error("the admission pass is for another show ({0})")]
    OtherShow(String),
}

impl Keyring {
    /// A pass for `ticket` of `show`, good until `expires_at` (Unix seconds), signed with
    /// the signing key.
    pub fn sign_pass(&self, show: &ShowId, ticket: Uuid, expires_at: u64) -> String {
        let key = self.signing();
        let kid = key.kid();
        let message = format!("{PASS_PREFIX}{kid}:{show}:{ticket}:{expires_at}");
        let mac = Keyring::sign_with(&key, message.as_bytes());
        format!("{message}:{mac}")
    }

    /// Puts a pass on `view` when it is an admission running `expires_in_ms` more at
    /// `now_ms` (the pass ends with it, rounded down to the second).
    pub fn attach(&self, view: &mut TicketView, show: &ShowId, state: TicketState, now_ms: u64) {
        if let TicketState::Admitted { expires_in_ms } = state {
            let exp = (now_ms + expires_in_ms) / 1000;
            view.pass = Some(self.sign_pass(show, view.ticket_id, exp));
        }
    }

    /// The admission `pass` proves at `now_s` (Unix seconds): its signature under any key in
    /// force, then its expiry. Asks nothing of the store.
    pub fn verify_pass(&self, pass: &str, now_s: u64) -> Result<Admission, PassError> {
        let (message, mac) = pass.rsplit_once(':').ok_or(PassError::Malformed)?;
        let fields: Vec<&str> = message.split(':').collect();
        let [version, kid, show, ticket, exp] = fields[..] else {
            return Err(PassError::Malformed);
        };
        if version != PASS_PREFIX.trim_end_matches(':') {
            return Err(PassError::Malformed);
        }
        let show: ShowId = show.parse().map_err(|_| PassError::Malformed)?;
        let ticket = Uuid::parse_str(ticket).map_err(|_| PassError::Malformed)?;
        if exp.is_empty() || exp.len() > 12 || !exp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(PassError::Malformed);
        }
        let expires_at: u64 = exp.parse().map_err(|_| PassError::Malformed)?;
        match self.verify(kid, message.as_bytes(), mac) {
            None => return Err(PassError::UnknownKey(kid.chars().take(32).collect())),
            Some(false) => return Err(PassError::BadSignature),
            Some(true) => {}
        }
        // Checked after the signature: an expired forgery is a forgery.
        if now_s >= expires_at {
            return Err(PassError::Expired);
        }
        Ok(Admission {
            show,
            ticket,
            expires_at,
            kid: kid.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use hmac::{Hmac, KeyInit, Mac};

    use super::*;

    fn ring(spec: &[(&str, u8)]) -> Keyring {
        spec.iter()
            .map(|(kid, b)| format!("{kid}:{}", STANDARD.encode([*b; 32])))
            .collect::<Vec<_>>()
            .join(",")
            .parse()
            .unwrap()
    }

    #[test]
    fn a_pass_verifies_until_it_expires() {
        let keys = ring(&[("k1", 1)]);
        let show: ShowId = "s.1".parse().unwrap();
        let ticket = Uuid::new_v4();
        let pass = keys.sign_pass(&show, ticket, 1_000);
        let admission = keys.verify_pass(&pass, 999).unwrap();
        assert_eq!((admission.show, admission.ticket), (show, ticket));
        assert_eq!(admission.expires_at, 1_000);
        assert_eq!(keys.verify_pass(&pass, 1_000), Err(PassError::Expired));
    }

    #[test]
    fn the_documented_bytes_are_what_is_signed() {
        // What another service does from the README alone.
        let keys = ring(&[("k1", 9)]);
        let ticket = Uuid::nil();
        let pass = keys.sign_pass(&"show".parse().unwrap(), ticket, 42);
        let (message, tag) = pass.rsplit_once(':').unwrap();
        assert_eq!(message, format!("v1:k1:show:{ticket}:42"));
        let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&[9u8; 32]).unwrap();
        mac.update(message.as_bytes());
        let expected =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        assert_eq!(tag, expected);
        assert_eq!(tag.len(), 43);
    }

    #[test]
    fn forged_and_foreign_passes_are_refused() {
        let old = ring(&[("old", 2)]);
        let rotated = ring(&[("new", 3), ("old", 2)]);
        let only_new = ring(&[("new", 3)]);
        let show: ShowId = "s".parse().unwrap();
        let pass = old.sign_pass(&show, Uuid::new_v4(), 100);
        // Rotation: the old key, second in the ring, still verifies.
        assert!(rotated.verify_pass(&pass, 1).is_ok());
        // Dropped from the ring: refused.
        assert_eq!(
            only_new.verify_pass(&pass, 1),
            Err(PassError::UnknownKey("old".into()))
        );
        // Any byte changed: the signature no longer holds.
        let longer = pass.replacen(":100:", ":1000:", 1);
        assert_eq!(old.verify_pass(&longer, 1), Err(PassError::BadSignature));
        let other_show = pass.replacen(":s:", ":t:", 1);
        assert_eq!(
            old.verify_pass(&other_show, 1),
            Err(PassError::BadSignature)
        );
        for bad in [
            "",
            "v1",
            "v2:old:s:00000000-0000-0000-0000-000000000000:100:x",
            "v1:old:s:not-a-uuid:100:x",
            "v1:old:s:00000000-0000-0000-0000-000000000000:-1:x",
            "v1:old:s:00000000-0000-0000-0000-000000000000:100:x:y",
        ] {
            assert_eq!(old.verify_pass(bad, 1), Err(PassError::Malformed), "{bad}");
        }
    }
}
