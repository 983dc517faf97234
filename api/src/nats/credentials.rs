//! NATS credentials, minted by the server in NATS' decentralized auth (JWT v2, written to
//! nats-io's specification): an operator signs accounts, an account's signing key signs
//! users, and nats-server checks each signature chain without asking neocloud.
//!
//! - [`bootstrap`] makes a new trust chain: an operator with a signing key, its system
//!   account with a signing key, and the account usage flows in (JetStream enabled) with
//!   one signing key; it gives the nats-server configuration that trusts them (a full
//!   resolver, which takes changed accounts at run time) and the settings neocloud keeps.
//! - [`Authority`] holds that account's public key and signing key. It mints a node's
//!   credential — publish to `neocloud.usage.v1.<region>.<node>` only, subscribe to its own
//!   acknowledgement inbox only, valid for a limited time (`exp`: nats-server refuses and
//!   disconnects it after; the agent renews it with its agent token) — and the server's
//!   own, unrestricted within the account.
//! - [`AccountIssuer`] re-signs the usage account with the operator's signing key, its
//!   revocation list included, and mints the system-account user that hands the account
//!   to nats-server (`nats::revocation`).

use std::collections::BTreeMap;

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
        Ok(Self {
            account: account.to_owned(),
            signer: seed_of("account signing seed", signing_seed, KeyPairType::Account)?,
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

    /// The credential of `node`'s agent: it may publish to the node's usage subject and
    /// subscribe below the node's inbox prefix, nothing else, until the authority's
    /// lifetime from `now` has passed.
    pub fn node_credentials(
        &self,
        node: NodeId,
        region: &str,
        now: i64,
    ) -> Result<UserCredential, CredentialError> {
        let subject = usage_stream::subject(region, node)
            .ok_or_else(|| CredentialError::Region(region.to_owned()))?;
        let inbox = format!("{}.>", usage_stream::inbox_prefix(node));
        let permissions = json!({"pub": {"allow": [subject]}, "sub": {"allow": [inbox]}});
        let expires = self.lifetime.map(|l| now.saturating_add(l));
        let name = format!("node {node}");
        user(
            &self.signer,
            &self.account,
            &name,
            permissions,
            (now, expires),
        )
    }

    /// The credentials file of neocloud's own processes (ingest workers): everything
    /// within the account, which is where their rights end.
    pub fn service_credentials(&self, name: &str, now: i64) -> Result<String, CredentialError> {
        let all = json!({"pub": {}, "sub": {}});
        Ok(user(&self.signer, &self.account, name, all, (now, None))?.creds)
    }
}

/// A user minted by an account's signing key.
#[derive(Debug, Clone)]
pub struct UserCredential {
    /// The `.creds` file NATS clients read: the user's JWT and seed (secret).
    pub creds: String,
    /// The user's public key (`U…`): what a revocation names.
    pub user: String,
    /// Unix seconds.
    pub issued: i64,
    /// Unix seconds; `None`: valid for ever.
    pub expires: Option<i64>,
}

/// A user of `account` with `permissions`, signed by `signer` (one of the account's
/// signing keys), issued at `now` and valid until `expires` (Unix seconds).
fn user(
    signer: &KeyPair,
    account: &str,
    name: &str,
    permissions: Value,
    (now, expires): (i64, Option<i64>),
) -> Result<UserCredential, CredentialError> {
    let user = KeyPair::new_user();
    let mut nats = permissions;
    nats["subs"] = json!(-1);
    nats["data"] = json!(-1);
    nats["payload"] = json!(-1);
    nats["issuer_account"] = json!(account);
    nats["type"] = json!("user");
    nats["version"] = json!(2);
    let jwt = sign(signer, &user.public_key(), name, nats, (now, expires))?;
    let seed = user
        .seed()
        .map_err(|e| CredentialError::Key(e.to_string()))?;
    Ok(UserCredential {
        creds: creds_file(&jwt, &seed),
        user: user.public_key(),
        issued: now,
        expires,
    })
}

/// Re-issues the usage account: what nats-server is told when the account's revocation
/// list changes. Holds the operator's signing key (the operator's own key stays offline)
/// and a signing key of the system account, whose users may hand accounts to nats-server.
pub struct AccountIssuer {
    operator_signer: KeyPair,
    account: String,
    account_signing_key: String,
    system_account: String,
    system_signer: KeyPair,
}

impl std::fmt::Debug for AccountIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountIssuer")
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

impl AccountIssuer {
    /// `operator_signing_seed`: an operator signing key (`SO…`); `system_account` (`A…`)
    /// and the seed of one of its signing keys (`SA…`).
    pub fn new(
        authority: &Authority,
        operator_signing_seed: &str,
        system_account: &str,
        system_signing_seed: &str,
    ) -> Result<Self, CredentialError> {
        let operator_signer = seed_of(
            "operator signing seed",
            operator_signing_seed,
            KeyPairType::Operator,
        )?;
        let system = KeyPair::from_public_key(system_account)
            .map_err(|e| CredentialError::Key(format!("system account: {e}")))?;
        if system.key_pair_type() != KeyPairType::Account {
            return Err(CredentialError::Key(
                "system account: not an account public key (A…)".into(),
            ));
        }
        Ok(Self {
            operator_signer,
            account: authority.account.clone(),
            account_signing_key: authority.signer.public_key(),
            system_account: system_account.to_owned(),
            system_signer: seed_of(
                "system account signing seed",
                system_signing_seed,
                KeyPairType::Account,
            )?,
        })
    }

    /// The usage account's public key.
    pub fn account(&self) -> &str {
        &self.account
    }

    /// The usage account's JWT as of `now`, revoking each user in `revoked` (public key →
    /// Unix seconds: its credentials issued at or before then are refused).
    pub fn account_jwt(
        &self,
        revoked: &BTreeMap<String, i64>,
        now: i64,
    ) -> Result<String, CredentialError> {
        let claims = usage_account_claims(&self.account_signing_key, revoked);
        sign(
            &self.operator_signer,
            &self.account,
            USAGE_ACCOUNT_NAME,
            claims,
            (now, None),
        )
    }

    /// A system-account user valid for `seconds` from `now`: it may hand account JWTs to
    /// nats-server (`$SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE`) and read the answers.
    pub fn system_credentials(&self, now: i64, seconds: i64) -> Result<String, CredentialError> {
        let permissions = json!({"pub": {"allow": ["$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE"]},
            "sub": {"allow": ["_INBOX.>"]}});
        let expires = Some(now.saturating_add(seconds));
        let name = "neocloud account issuer";
        Ok(user(
            &self.system_signer,
            &self.system_account,
            name,
            permissions,
            (now, expires),
        )?
        .creds)
    }
}

fn seed_of(what: &str, seed: &str, kind: KeyPairType) -> Result<KeyPair, CredentialError> {
    let key = KeyPair::from_seed(seed).map_err(|e| CredentialError::Key(format!("{what}: {e}")))?;
    if key.key_pair_type() != kind {
        return Err(CredentialError::Key(format!(
            "{what}: not a seed of a {kind:?} key"
        )));
    }
    Ok(key)
}

const USAGE_ACCOUNT_NAME: &str = "NEOCLOUD";

/// The usage account's claims: unlimited, JetStream enabled, users minted by
/// `signing_key`, and the revocation list.
fn usage_account_claims(signing_key: &str, revoked: &BTreeMap<String, i64>) -> Value {
    let mut limits = unlimited();
    for limit in ["mem_storage", "disk_storage", "streams", "consumer"] {
        limits[limit] = json!(-1);
    }
    let mut claims = json!({"limits": limits, "signing_keys": [signing_key],
        "default_permissions": {"pub": {}, "sub": {}}, "type": "account", "version": 2});
    if !revoked.is_empty() {
        claims["revocations"] = json!(revoked);
    }
    claims
}

fn unlimited() -> Value {
    json!({"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
        "wildcards": true, "conn": -1, "leaf": -1})
}

/// A new trust chain: what nats-server is configured with, and what neocloud keeps.
#[derive(Debug)]
pub struct Bootstrap {
    /// nats-server configuration: the operator, the system account and the usage account,
    /// preloaded into a full resolver (which keeps accounts in a directory and takes
    /// changed ones at run time).
    pub server_config: String,
    /// The usage account's public key (`nats.account`).
    pub account: String,
    /// The seed of the usage account's signing key (`nats.account_signing_seed`): secret.
    pub account_signing_seed: String,
    /// The seed of the operator's signing key (`nats.operator_signing_seed`): secret; it
    /// re-signs the usage account when its revocation list changes.
    pub operator_signing_seed: String,
    /// The system account's public key (`nats.system_account`).
    pub system_account: String,
    /// The seed of the system account's signing key (`nats.system_signing_seed`): secret.
    pub system_signing_seed: String,
    /// The operator's own seed: secret, kept offline (it signs new signing keys).
    pub operator_seed: String,
}

/// Makes a new operator, system account and usage account (JetStream enabled), each with
/// one signing key, as of `now` (Unix seconds); nats-server keeps accounts in
/// `resolver_dir`.
pub fn bootstrap(now: i64, resolver_dir: &std::path::Path) -> Result<Bootstrap, CredentialError> {
    let operator = KeyPair::new_operator();
    let operator_signing = KeyPair::new_operator();
    let system = KeyPair::new_account();
    let system_signing = KeyPair::new_account();
    let account = KeyPair::new_account();
    let signing = KeyPair::new_account();
    let operator_jwt = sign(
        &operator,
        &operator.public_key(),
        "neocloud",
        json!({"system_account": system.public_key(), "type": "operator", "version": 2,
            "signing_keys": [operator_signing.public_key()]}),
        (now, None),
    )?;
    let system_jwt = sign(
        &operator,
        &system.public_key(),
        "SYS",
        json!({"limits": unlimited(), "signing_keys": [system_signing.public_key()],
            "type": "account", "version": 2}),
        (now, None),
    )?;
    let account_jwt = sign(
        &operator,
        &account.public_key(),
        USAGE_ACCOUNT_NAME,
        usage_account_claims(&signing.public_key(), &BTreeMap::new()),
        (now, None),
    )?;
    let server_config = format!(
        "# neocloud's NATS trust chain (neocloud admin nats-bootstrap). Add listen, jetstream\n\
         # and cluster settings for this site.\n\
         operator: {operator_jwt}\n\
         system_account: {system}\n\
         resolver: {{\n  type: full\n  dir: {dir}\n  allow_delete: false\n  interval: \"2m\"\n}}\n\
         resolver_preload: {{\n  {system}: {system_jwt}\n  {account}: {account_jwt}\n}}\n",
        system = system.public_key(),
        account = account.public_key(),
        dir = serde_json::Value::from(resolver_dir.display().to_string()),
    );
    let seed = |k: &KeyPair| k.seed().map_err(|e| CredentialError::Key(e.to_string()));
    Ok(Bootstrap {
        server_config,
        account: account.public_key(),
        account_signing_seed: seed(&signing)?,
        operator_signing_seed: seed(&operator_signing)?,
        system_account: system.public_key(),
        system_signing_seed: seed(&system_signing)?,
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

    fn dir() -> &'static std::path::Path {
        std::path::Path::new("/var/lib/nats/jwt")
    }

    fn claims_of(jwt: &str) -> Value {
        let body = jwt.split('.').nth(1).unwrap();
        serde_json::from_slice(&BASE64URL_NOPAD.decode(body.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn a_node_credential_is_signed_by_the_account_and_allows_its_subject_only() {
        let chain = bootstrap(1_700_000_000, dir()).unwrap();
        let authority = Authority::new(&chain.account, &chain.account_signing_seed)
            .unwrap()
            .expiring_after(3600);
        let node = NodeId::new();
        let minted = authority
            .node_credentials(node, "eu-west", 1_700_000_000)
            .unwrap();
        let jwt = minted.creds.lines().nth(1).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        let signer = KeyPair::from_seed(&chain.account_signing_seed).unwrap();
        let signature = BASE64URL_NOPAD.decode(parts[2].as_bytes()).unwrap();
        signer
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .unwrap();
        let claims = claims_of(jwt);
        assert_eq!(claims["iss"], json!(signer.public_key()));
        assert_eq!(claims["sub"], json!(minted.user));
        assert_eq!(minted.expires, Some(1_700_003_600));
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
        let chain = bootstrap(0, dir()).unwrap();
        assert!(Authority::new(&chain.account, &chain.operator_seed).is_err());
        let user = KeyPair::new_user();
        assert!(Authority::new(&user.public_key(), &chain.account_signing_seed).is_err());
    }

    /// The preloaded account JWT in the configuration bootstrap writes.
    fn preloaded(chain: &Bootstrap) -> Value {
        let line = chain
            .server_config
            .lines()
            .find(|l| l.trim_start().starts_with(&chain.account))
            .unwrap();
        claims_of(line.split(": ").nth(1).unwrap())
    }

    #[test]
    fn a_reissued_account_keeps_its_claims_and_adds_the_revocations() {
        let chain = bootstrap(1_700_000_000, dir()).unwrap();
        let authority = Authority::new(&chain.account, &chain.account_signing_seed).unwrap();
        let issuer = AccountIssuer::new(
            &authority,
            &chain.operator_signing_seed,
            &chain.system_account,
            &chain.system_signing_seed,
        )
        .unwrap();
        let revoked = BTreeMap::from([("UABC".to_owned(), 1_700_000_100)]);
        let jwt = issuer.account_jwt(&revoked, 1_700_000_200).unwrap();
        let claims = claims_of(&jwt);
        let operator_signer = KeyPair::from_seed(&chain.operator_signing_seed).unwrap();
        assert_eq!(claims["iss"], json!(operator_signer.public_key()));
        assert_eq!(claims["sub"], json!(chain.account));
        assert_eq!(claims["iat"], json!(1_700_000_200));
        assert_eq!(
            claims["nats"]["revocations"],
            json!({"UABC": 1_700_000_100})
        );
        let mut without = claims["nats"].clone();
        without.as_object_mut().unwrap().remove("revocations");
        assert_eq!(
            without,
            preloaded(&chain)["nats"],
            "the same account otherwise"
        );
        assert!(chain.server_config.contains("type: full"));
        assert!(chain.server_config.contains("dir: \"/var/lib/nats/jwt\""));

        let system = issuer.system_credentials(1_700_000_000, 600).unwrap();
        let system_claims = claims_of(system.lines().nth(1).unwrap());
        assert_eq!(
            system_claims["nats"]["issuer_account"],
            json!(chain.system_account)
        );
        assert_eq!(system_claims["exp"], json!(1_700_000_600));
        assert!(
            AccountIssuer::new(
                &authority,
                &chain.account_signing_seed,
                &chain.system_account,
                &chain.system_signing_seed
            )
            .is_err(),
            "an account seed is no operator signing key"
        );
    }
}
