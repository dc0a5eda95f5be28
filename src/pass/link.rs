//! Bypass links (docs/bypass.md): an operator signs a link that lets whoever opens it through
//! one show's queue until it expires, for as long as the show keeps a `link` bypass rule
//! (removing the rule voids every link signed). Minted and checked with no store call.
//!
//! A link's token is `b2.<kid>.<showId>.<iat>.<exp>.<rand>.<mac>`: `iat` when it was signed
//! and `exp` its end in Unix seconds,
//! `rand` 16 random bytes and `mac` the HMAC-SHA256 (under the key `kid` of `PASS_KEYS`) of
//! everything before the last `.`, both base64url without padding, as a join challenge's
//! (`challenge.rs`, whose `c1` prefix keeps the two apart).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::Keyring;
use crate::model::ShowId;

/// The longest a link may run: a week.
pub const MAX_LINK_TTL_SECONDS: u64 = 7 * 24 * 3600;

/// `b2`: links signed with the time they were signed (`b1` links, which had none, are no
/// longer taken).
const PREFIX: &str = "b2";

/// A link this server signed, as its check reads it: what the store needs to let it through
/// once, and only while the show takes links signed since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedLink {
    /// Its random part: names it where it is marked used.
    pub id: String,
    /// When it was signed (Unix seconds).
    pub iat: u64,
    /// When it ends (Unix seconds).
    pub exp: u64,
}

/// Why a link was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// Not of this server's shape, or not signed by it.
    #[error("this bypass link is not one this server signed")]
    Forged,
    /// Signed for another show.
    #[error("this bypass link is for another show")]
    OtherShow,
    /// Past its end.
    #[error("this bypass link has expired; ask for a new one")]
    Expired,
}

impl Keyring {
    /// A link's token for `show`, signed at `iat` and running until `exp` (Unix seconds).
    pub fn mint_link(&self, show: &ShowId, iat: u64, exp: u64) -> String {
        let rand: [u8; 16] = rand::random();
        let key = self.signing();
        let message = format!(
            "{PREFIX}.{}.{show}.{iat}.{exp}.{}",
            key.kid(),
            URL_SAFE_NO_PAD.encode(rand)
        );
        let mac = Keyring::sign_with(&key, message.as_bytes());
        format!("{message}.{mac}")
    }

    /// The link `token` is, if this server signed it for `show` and it still runs at
    /// `now_s`. (A show id may hold dots: the fields are read from both ends.)
    pub fn check_link(
        &self,
        token: &str,
        show: &ShowId,
        now_s: u64,
    ) -> Result<SignedLink, LinkError> {
        let (message, mac) = token.rsplit_once('.').ok_or(LinkError::Forged)?;
        let mut right = message.rsplitn(4, '.');
        let (Some(rand), Some(exp), Some(iat), Some(head)) =
            (right.next(), right.next(), right.next(), right.next())
        else {
            return Err(LinkError::Forged);
        };
        let mut left = head.splitn(3, '.');
        let (Some(PREFIX), Some(kid), Some(signed_for)) = (left.next(), left.next(), left.next())
        else {
            return Err(LinkError::Forged);
        };
        let number = |text: &str| text.parse::<u64>().map_err(|_| LinkError::Forged);
        let (iat, exp) = (number(iat)?, number(exp)?);
        if rand.is_empty() || rand.len() > 32 {
            return Err(LinkError::Forged);
        }
        if self.verify(kid, message.as_bytes(), mac) != Some(true) {
            return Err(LinkError::Forged);
        }
        if signed_for != show.as_str() {
            return Err(LinkError::OtherShow);
        }
        if now_s >= exp {
            return Err(LinkError::Expired);
        }
        Ok(SignedLink {
            id: rand.to_owned(),
            iat,
            exp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_opens_its_show_until_it_ends_and_nothing_else() {
        let keys = Keyring::generate();
        let show: ShowId = "fest".parse().unwrap();
        let link = keys.mint_link(&show, 400, 1_000);
        let signed = keys.check_link(&link, &show, 999).unwrap();
        assert_eq!((signed.iat, signed.exp), (400, 1_000));
        assert!(link.contains(&signed.id));
        // A show id with dots reads as well.
        let dotted: ShowId = "fest.2027".parse().unwrap();
        let its = keys.mint_link(&dotted, 1, 1_000);
        assert!(keys.check_link(&its, &dotted, 5).is_ok());
        assert_eq!(
            keys.check_link(&link, &show, 1_000),
            Err(LinkError::Expired)
        );
        let other: ShowId = "tour".parse().unwrap();
        assert_eq!(
            keys.check_link(&link, &other, 10),
            Err(LinkError::OtherShow)
        );
        // Another server's link, one edited, a join challenge, garbage: not ours.
        let foreign = Keyring::generate().mint_link(&show, 400, 1_000);
        assert_eq!(keys.check_link(&foreign, &show, 10), Err(LinkError::Forged));
        let later = link.replacen(".1000.", ".9999.", 1);
        assert_eq!(keys.check_link(&later, &show, 10), Err(LinkError::Forged));
        let challenge = keys.mint_challenge_until(&show, 1_000);
        assert_eq!(
            keys.check_link(&challenge, &show, 10),
            Err(LinkError::Forged)
        );
        for junk in ["", ".", "b1", "b1.x.fest.5.r.m", "b1....."] {
            assert_eq!(
                keys.check_link(junk, &show, 1),
                Err(LinkError::Forged),
                "{junk}"
            );
        }
    }
}
