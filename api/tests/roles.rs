//! The role matrix: every mutation tried with every role. A role either may run it (the
//! answer is anything but FORBIDDEN) or is refused with FORBIDDEN before anything changes.

mod support;

use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Operator,
    Admin,
    Member,
    Agent,
}

async fn role_matrix_holds_for_every_mutation(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app.register_node("hgx-0", "H100", 8, "").await;
    let agent = support::agent_token(&r);
    let node = r["data"]["registerNode"]["node"]["id"].clone();
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
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id allocations { id } } } }",
            json!({"s": sku}),
        )
        .await;
    let order = r["data"]["placeOrder"]["order"]["id"].clone();
    let allocation = r["data"]["placeOrder"]["order"]["allocations"][0]["id"].clone();

    let key_of = |who: Who| match who {
        Who::Operator => app.operator_key.clone(),
        Who::Admin => admin.clone(),
        Who::Member => member.clone(),
        Who::Agent => agent.clone(),
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
            &[Operator],
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
            &[Operator],
        ),
        (
            "mutation($n: ID!) { drainNode(id: $n) { id } }",
            json!({"n": node}),
            &[Operator],
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
            "mutation { startTopUp(amount: \"100\") { id } }",
            json!({}),
            &[Admin],
        ),
        (
            "mutation($t: ID!) { closeBillingPeriod(tenantId: $t) { id } }",
            json!({"t": tenant}),
            &[Operator],
        ),
    ];
    for (mutation, vars, allowed) in &cases {
        for who in [Operator, Admin, Member, Agent] {
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
}

on_both_databases!(role_matrix_holds_for_every_mutation);
