//! The role matrix: every mutation tried with every role. A role either may run it (the
//! answer is anything but FORBIDDEN) or is refused with FORBIDDEN before anything changes.
//! The billing (finance) role reads everything a member reads and runs no mutation.

mod support;

use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Operator,
    Admin,
    Member,
    Billing,
    Agent,
    Provider,
}

async fn role_matrix_holds_for_every_mutation(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app.register_node("hgx-0", "H100", 8, "").await;
    let agent = support::agent_token(&r);
    let node = r["data"]["registerNode"]["node"]["id"].clone();
    let r = app.register_node("hgx-old", "H100", 8, "").await;
    let old_node = r["data"]["registerNode"]["node"]["id"].clone();
    let sku = app.create_h100_sku().await;
    let (tenant, admin) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&admin),
            "mutation { createApiKey(role: TENANT_MEMBER) { apiKey } }",
            json!({}),
        )
        .await;
    let member = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .expect("key")
        .to_owned();
    let r = app
        .gql(
            Some(&admin),
            "mutation { createApiKey(role: TENANT_BILLING) { apiKey } }",
            json!({}),
        )
        .await;
    let billing = r["data"]["createApiKey"]["apiKey"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let r = app
        .gql(
            Some(&admin),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id allocations { id } } } }",
            json!({"s": sku}),
        )
        .await;
    let order = r["data"]["placeOrder"]["order"]["id"].clone();
    let allocation = r["data"]["placeOrder"]["order"]["allocations"][0]["id"].clone();

    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createProvider(input: {name: \"acme-gpu\", legalName: \"Acme GPU GmbH\", country: \"DE\", currency: \"EUR\", payoutMethod: MANUAL}) { provider { id } apiKey } }",
            json!({}),
        )
        .await;
    let provider_id = r["data"]["createProvider"]["provider"]["id"].clone();
    let provider = r["data"]["createProvider"]["apiKey"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();

    let key_of = |who: Who| match who {
        Who::Operator => app.operator_key.clone(),
        Who::Admin => admin.clone(),
        Who::Member => member.clone(),
        Who::Billing => billing.clone(),
        Who::Agent => agent.clone(),
        Who::Provider => provider.clone(),
    };
    use Who::*;
    // (mutation, variables, who may run it)
    let cases: Vec<(&str, Value, &[Who])> = vec![
        (
            "mutation { createTenant(input: {name: \"x\", currency: \"USD\"}) { apiKey } }",
            json!({}),
            &[Operator],
        ),
        (
            "mutation { registerNode(input: {hostname: \"n\", region: \"r\", zone: \"z\", rack: \"k\", nvlinkDomain: \"n\", gpuModel: \"H100\", gpus: [{uuid: \"GPU-n\", index: 0}]}) { agentToken } }",
            json!({}),
            // A provider registers its own nodes (unschedulable until verified).
            &[Operator, Provider],
        ),
        (
            "mutation { createSku(input: {name: \"s\", gpuModel: \"H100\", form: WHOLE_GPU, region: \"r\", listPricePerHour: \"1\", currency: \"USD\"}) { sku { id } } }",
            json!({}),
            &[Operator],
        ),
        (
            "mutation($t: ID!) { setQuota(input: {tenantId: $t, scope: ALLOCATIONS, max: 100}) { quota { id } } }",
            json!({"t": tenant}),
            &[Operator],
        ),
        (
            "mutation($n: ID!) { setNodeState(id: $n, state: ACTIVE) { id } }",
            json!({"n": node}),
            // A provider its own nodes only (this one is the operator's: NOT_FOUND).
            &[Operator, Provider],
        ),
        (
            "mutation($n: ID!) { drainNode(id: $n) { id } }",
            json!({"n": node}),
            &[Operator, Provider],
        ),
        (
            "mutation($n: ID!) { retireNode(id: $n) { id } }",
            json!({"n": old_node}),
            &[Operator, Provider],
        ),
        (
            "mutation($t: ID!) { resumeTenant(id: $t) { id } }",
            json!({"t": tenant}),
            &[Operator],
        ),
        (
            "mutation { createApiKey(role: OPERATOR) { apiKey } }",
            json!({}),
            &[Operator],
        ),
        (
            "mutation { createApiKey(role: TENANT_ADMIN) { apiKey } }",
            json!({}),
            &[Operator, Admin],
        ),
        (
            "mutation { createApiKey(role: TENANT_MEMBER) { apiKey } }",
            json!({}),
            &[Operator, Admin, Member],
        ),
        (
            "mutation { createApiKey(role: TENANT_BILLING) { apiKey } }",
            json!({}),
            &[Operator, Admin],
        ),
        (
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id } } }",
            json!({"s": sku}),
            &[Admin, Member],
        ),
        (
            "mutation($a: ID!) { releaseAllocation(id: $a) { id } }",
            json!({"a": allocation}),
            &[Operator, Admin, Member],
        ),
        (
            "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
            json!({"o": order}),
            &[Operator, Admin, Member],
        ),
        (
            "mutation($t: ID!) { grantCredits(input: {tenantId: $t, kind: PROMOTIONAL, amount: \"1\", reason: \"r\"}) { id } }",
            json!({"t": tenant}),
            &[Operator],
        ),
        (
            "mutation($t: ID!) { setCollectionMode(tenantId: $t, mode: SEND_INVOICE, daysUntilDue: 14) { collectionMode } }",
            json!({"t": tenant}),
            &[Operator],
        ),
        (
            "mutation { setDefaultPaymentMethod(paymentMethodId: \"pm_card_visa\") { tenantId } }",
            json!({}),
            &[Admin],
        ),
        (
            "mutation { fetchReferenceRates { day added } }",
            json!({}),
            &[Operator],
        ),
        (
            "mutation { startCardSetup { setupIntentId } }",
            json!({}),
            &[Admin],
        ),
        (
            "mutation { finishCardSetup(setupIntentId: \"seti_1\") { tenantId } }",
            json!({}),
            &[Admin],
        ),
        (
            "mutation { startTopUp(amount: \"100\") { id } }",
            json!({}),
            &[Admin],
        ),
        (
            "mutation($t: ID!) { closeBillingPeriod(tenantId: $t) { id } }",
            json!({"t": tenant}),
            &[Operator],
        ),
        (
            "mutation { createProvider(input: {name: \"p\", legalName: \"P\", country: \"FR\", currency: \"EUR\", payoutMethod: MANUAL}) { apiKey } }",
            json!({}),
            &[Operator],
        ),
        (
            "mutation($p: ID!) { createProviderKey(providerId: $p) { apiKey } }",
            json!({"p": provider_id}),
            // A provider key mints keys for its own provider (another's is NOT_FOUND).
            &[Operator, Provider],
        ),
        (
            "mutation($p: ID!) { updateProvider(id: $p, input: {legalName: \"Acme GPU GmbH\", country: \"DE\", currency: \"EUR\", payoutMethod: MANUAL}) { legalName } }",
            json!({"p": provider_id}),
            &[Operator],
        ),
        (
            "mutation($p: ID!) { createProviderAgreement(input: {providerId: $p, model: REVENUE_SHARE, revenueSharePercent: \"70\", platformFeePercent: \"5\", payoutMinimum: \"0\"}) { version } }",
            json!({"p": provider_id}),
            &[Operator],
        ),
        (
            "mutation($i: ID!) { markInvoicePaid(id: $i, reference: \"bank 1\") { status } }",
            json!({"i": uuid::Uuid::new_v4()}),
            &[Operator],
        ),
        (
            "mutation { closeProviderStatements }",
            json!({}),
            &[Operator],
        ),
        (
            "mutation { createSepaPayoutFile { messageId } }",
            json!({}),
            &[Operator],
        ),
        (
            "mutation($p: ID!) { recordManualPayout(payoutId: $p, reference: \"bank\") { id } }",
            json!({"p": uuid::Uuid::new_v4().to_string()}),
            &[Operator],
        ),
        (
            "mutation { requireSecondFactor(required: false) { secondFactorRequired } }",
            json!({}),
            &[Operator, Admin],
        ),
        (
            // A provider for its own people (an operator names the provider).
            "mutation { requireProviderSecondFactor(required: false) { secondFactorRequired } }",
            json!({}),
            &[Operator, Provider],
        ),
        // A person's own second factor: no key is a person.
        ("mutation { startSecondFactor { secret } }", json!({}), &[]),
        (
            "mutation { confirmSecondFactor(code: \"123456\") }",
            json!({}),
            &[],
        ),
        (
            "mutation { disableSecondFactor(code: \"123456\") }",
            json!({}),
            &[],
        ),
    ];
    for (mutation, vars, allowed) in &cases {
        for who in [Operator, Admin, Member, Billing, Agent, Provider] {
            let r = app.gql(Some(&key_of(who)), mutation, vars.clone()).await;
            let code = error_code(&r);
            if allowed.contains(&who) {
                assert_ne!(code, Some("FORBIDDEN"), "{who:?} may run {mutation}: {r}");
                assert_ne!(code, Some("UNAUTHENTICATED"), "{who:?}: {mutation}: {r}");
            } else {
                assert_eq!(
                    code,
                    Some("FORBIDDEN"),
                    "{who:?} must not run {mutation}: {r}"
                );
            }
        }
    }
    billing_reads_and_changes_nothing(&app, &billing).await;
}

/// Finance's key reads orders, usage, invoices and budgets; a refused mutation (even
/// inside a document that also reads) runs nothing.
async fn billing_reads_and_changes_nothing(app: &TestApp, billing: &str) {
    let reads = "query($f: DateTime!, $t: DateTime!) {
        viewer { role }
        orders(first: 10) { nodes { id allocations { id gpus { uuid events { code } } } } }
        allocations(first: 10) { nodes { id } }
        usage(from: $f, to: $t, groupBy: [SKU]) { rows { key allocatedSeconds } }
        invoices(first: 10) { nodes { id total } }
        upcomingInvoice { total lines { description } }
        budget { monthlyLimit }
    }";
    let now = chrono::Utc::now();
    let window =
        json!({"f": (now - chrono::Duration::days(1)).to_rfc3339(), "t": now.to_rfc3339()});
    let r = app.gql(Some(billing), reads, window).await;
    assert!(r["errors"].is_null(), "{r}");
    assert_eq!(r["data"]["viewer"]["role"], "TENANT_BILLING", "{r}");
    let orders = r["data"]["orders"]["nodes"]
        .as_array()
        .expect("orders")
        .len();
    assert!(orders > 0, "billing sees the tenant's orders: {r}");
    let r = app
        .gql(
            Some(billing),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id } } }",
            json!({"s": "anything"}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(
            Some(billing),
            "{ orders(first: 100) { nodes { id } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["orders"]["nodes"]
            .as_array()
            .expect("orders")
            .len(),
        orders,
        "a refused mutation places nothing: {r}"
    );
    // Another tenant's data stays out of reach.
    let r = app
        .gql(
            Some(billing),
            "query($t: ID!) { upcomingInvoice(tenantId: $t) { total } }",
            json!({"t": "0192f000-0000-7000-8000-000000000000"}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
}

on_both_databases!(role_matrix_holds_for_every_mutation);
