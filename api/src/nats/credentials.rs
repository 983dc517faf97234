//! NATS credentials, minted by the server in NATS' decentralized auth (JWT v2, written to
//! nats-io's specification): an operator signs accounts, an account's signing key signs
//! users, and nats-server checks each signature chain without asking neocloud.
//!
//! - [`bootstrap`] makes a new trust chain: an operator, its system account, and the
//!   account usage flows in (JetStream enabled) with one signing key; it gives the
//!   nats-server configuration that trusts them and the settings neocloud keeps.
//! - [`Authority`] holds that account's public key and signing key. It mints a node's
//!   credential — publish to `neocloud.usage.v1.<region>.<node>` only, subscribe to its own
//!   acknowledgement inbox only, valid for a limited time (`exp`: nats-server refuses and
//!   disconnects it after; the agent renews it with its agent token) — and the server's
//!   own, unrestricted within the account.

use data_encoding::{BASE32_NOPAD, BASE64URL_NOPAD};
use neocloud_schema::ids::NodeId;
use neocloud_schema::usage_stream;
use nkeys::{KeyPair, KeyPairType};
use serde_json::{Value, json};
use sha2::{Digest, Sha512_256};

/// What went wrong minting a credential.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("{0}")]
    Key(String),
    #[error("region `{0}` cannot name a NATS subject")]
    Region(String),
}

/// The account usage is published in, and the signing key that mints its users.
pub struct Authority {
    account: String,
    signer: KeyPair,
    /// Seconds a node's credential is valid; `None`: for ever.
    lifetime: Option<i64>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

impl Authority {
    /// `account`: the account's public key (`A…`); `signing_seed`: the seed of one of its
    /// signing keys (`SA…`).
    pub fn new(account: &str, signing_seed: &str) -> Result<Self, CredentialError> {
        let key = KeyPair::from_public_key(account)
            .map_err(|e| CredentialError::Key(format!("account: {e}")))?;
        if key.key_pair_type() != KeyPairType::Account {
            return Err(CredentialError::Key(
                "account: not an account public key (A…)".into(),
            ));
        }
        let signer = KeyPair::from_seed(signing_seed)
            .map_err(|e| CredentialError::Key(format!("account signing seed: {e}")))?;
        if signer.key_pair_type() != KeyPairType::Account {
            return Err(CredentialError::Key(
                "account signing seed: not an account seed (SA…)".into(),
            ));
        }
        Ok(Self {
            account: account.to_owned(),
            signer,
            lifetime: None,
        })
    }

    /// The same authority, minting node credentials valid for `seconds`.
    #[must_use]
    pub fn expiring_after(self, seconds: i64) -> Self {
        Self {
            lifetime: Some(seconds),
            ..self
        }
    }

    /// The credentials file (`.creds`) of `node`'s agent: it may publish to the node's
    /// usage subject and subscribe below the node's inbox prefix, nothing else, until the
    /// authority's lifetime from `now` has passed.
    pub fn node_credentials(
        &self,
        node: NodeId,
        region: &str,
        now: i64,
    ) -> Result<String, CredentialError> {
        let subject = usage_stream::subject(region, node)
            .ok_or_else(|| CredentialError::Region(region.to_owned()))?;
        let inbox = format!("{}.>", usage_stream::inbox_prefix(node));
        let permissions = json!({"pub": {"allow": [subject]}, "sub": {"allow": [inbox]}});
        let expires = self.lifetime.map(|l| now.saturating_add(l));
        self.user(&format!("node {node}"), permissions, (now, expires))
    }

    /// The credentials file of neocloud's own processes (ingest workers): everything
    /// within the account, which is where their rights end.
    pub fn service_credentials(&self, name: &str, now: i64) -> Result<String, CredentialError> {
        self.user(name, json!({"pub": {}, "sub": {}}), (now, None))
    }

    /// A user's credentials, issued at `now` and valid until `expires` (Unix seconds).
    fn user(
        &self,
        name: &str,
        permissions: Value,
        (now, expires): (i64, Option<i64>),
    ) -> Result<String, CredentialError> {
        let user = KeyPair::new_user();
        let mut nats = permissions;
        nats["subs"] = json!(-1);
        nats["data"] = json!(-1);
        nats["payload"] = json!(-1);
        nats["issuer_account"] = json!(self.account);
        nats["type"] = json!("user");
        nats["version"] = json!(2);
        let jwt = sign(&self.signer, &user.public_key(), name, nats, (now, expires))?;
        let seed = user
            .seed()
            .map_err(|e| CredentialError::Key(e.to_string()))?;
        Ok(creds_file(&jwt, &seed))
    }
}

/// A new trust chain: what nats-server is configured with, and what neocloud keeps.
#[derive(Debug)]
pub struct Bootstrap {
    /// nats-server configuration: the operator, the system account and the usage account,
    /// preloaded into a memory resolver.
    pub server_config: String,
    /// The usage account's public key (`nats.account`).
    pub account: String,
    /// The seed of the usage account's signing key (`nats.account_signing_seed`): secret.
    pub account_signing_seed: String,
    /// The operator's seed, to sign changed accounts later: secret, kept offline.
    pub operator_seed: String,
}

/// Makes a new operator, system account and usage account (JetStream enabled, one signing
/// key) as of `now` (Unix seconds).
pub fn bootstrap(now: i64) -> Result<Bootstrap, CredentialError> {
    let operator = KeyPair::new_operator();
    let system = KeyPair::new_account();
    let account = KeyPair::new_account();
    let signing = KeyPair::new_account();
    let unlimited = json!({"subs": -1, "data": -1, "payload": -1, "imports": -1,
        "exports": -1, "wildcards": true, "conn": -1, "leaf": -1});
    let mut with_jetstream = unlimited.clone();
    for limit in ["mem_storage", "disk_storage", "streams", "consumer"] {
        with_jetstream[limit] = json!(-1);
    }
    let operator_jwt = sign(
        &operator,
        &operator.public_key(),
        "neocloud",
        json!({"system_account": system.public_key(), "type": "operator", "version": 2}),
        (now, None),
    )?;
    let system_jwt = sign(
        &operator,
        &system.public_key(),
        "SYS",
        json!({"limits": unlimited, "type": "account", "version": 2}),
        (now, None),
    )?;
    let account_jwt = sign(
        &operator,
        &account.public_key(),
        "NEOCLOUD",
        json!({"limits": with_jetstream, "signing_keys": [signing.public_key()],
            "default_permissions": {"pub": {}, "sub": {}}, "type": "account", "version": 2}),
        (now, None),
    )?;
    let server_config = format!(
        "# neocloud's NATS trust chain (neocloud admin nats-bootstrap). Add listen, jetstream\n\
         # and cluster settings for this site.\n\
         operator: {operator_jwt}\n\
         system_account: {system}\n\
         resolver: MEMORY\n\
         resolver_preload: {{\n  {system}: {system_jwt}\n  {account}: {account_jwt}\n}}\n",
        system = system.public_key(),
        account = account.public_key(),
    );
    let seed = |k: &KeyPair| k.seed().map_err(|e| CredentialError::Key(e.to_string()));
    Ok(Bootstrap {
        server_config,
        account: account.public_key(),
        account_signing_seed: seed(&signing)?,
        operator_seed: seed(&operator)?,
    })
}

/// A JWT of `subject` named `name` with the `nats` claims, issued at `now` by `issuer`
/// and valid until `expires` (Unix seconds; `None`: for ever): `jti`, the token's unique
/// id, is the SHA-512/256 of the claims without it, in base32 (nats-server checks the
/// signature, not this hash).
fn sign(
    issuer: &KeyPair,
    subject: &str,
    name: &str,
    nats: Value,
    (now, expires): (i64, Option<i64>),
) -> Result<String, CredentialError> {
    let mut claims = json!({"iat": now, "iss": issuer.public_key(), "name": name,
        "sub": subject, "nats": nats});
    if let Some(expires) = expires {
        claims["exp"] = json!(expires);
    }
    claims["jti"] = json!(BASE32_NOPAD.encode(&Sha512_256::digest(claims.to_string())));
    let header = BASE64URL_NOPAD.encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let body = BASE64URL_NOPAD.encode(claims.to_string().as_bytes());
    let signed = format!("{header}.{body}");
    let signature = issuer
        .sign(signed.as_bytes())
        .map_err(|e| CredentialError::Key(e.to_string()))?;
    Ok(format!("{signed}.{}", BASE64URL_NOPAD.encode(&signature)))
}

/// The `.creds` file NATS clients read: the user's JWT and seed.
fn creds_file(jwt: &str, seed: &str) -> String {
    format!(
        "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
         ************************* IMPORTANT *************************\n\
         NKEY Seed printed below can be used to sign and prove identity.\n\
         NKEYs are sensitive and should be treated as secrets.\n\n\
         -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims_of(jwt: &str) -> Value {
        let body = jwt.split('.').nth(1).unwrap();
        serde_json::from_slice(&BASE64URL_NOPAD.decode(body.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn a_node_credential_is_signed_by_the_account_and_allows_its_subject_only() {
        let chain = bootstrap(1_700_000_000).unwrap();
        let authority = Authority::new(&chain.account, &chain.account_signing_seed)
            .unwrap()
            .expiring_after(3600);
        let node = NodeId::new();
        let creds = authority
            .node_credentials(node, "eu-west", 1_700_000_000)
            .unwrap();
        let jwt = creds.lines().nth(1).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        let signer = KeyPair::from_seed(&chain.account_signing_seed).unwrap();
        let signature = BASE64URL_NOPAD.decode(parts[2].as_bytes()).unwrap();
        signer
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .unwrap();
        let claims = claims_of(jwt);
        assert_eq!(claims["iss"], json!(signer.public_key()));
        assert_eq!(claims["nats"]["issuer_account"], json!(chain.account));
        assert_eq!(
            claims["nats"]["pub"]["allow"],
            json!([format!("neocloud.usage.v1.eu-west.{node}")])
        );
        assert_eq!(
            claims["nats"]["sub"]["allow"],
            json!([format!("{}.>", usage_stream::inbox_prefix(node))])
        );
        assert_eq!(claims["iat"], json!(1_700_000_000));
        assert_eq!(claims["exp"], json!(1_700_003_600), "valid for an hour");
        assert!(authority.node_credentials(node, "eu.west", 0).is_err());
    }

    #[test]
    fn an_authority_refuses_keys_of_the_wrong_kind() {
        let chain = bootstrap(0).unwrap();
        assert!(Authority::new(&chain.account, &chain.operator_seed).is_err());
        let user = KeyPair::new_user();
        assert!(Authority::new(&user.public_key(), &chain.account_signing_seed).is_err());
    }
}
