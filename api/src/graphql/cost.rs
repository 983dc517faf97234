//! The cost limit, enforced after the engine has measured a query so that a refusal says
//! what the query cost and what the limit is (the engine's own limit only says "too
//! complex"). Each field costs 1; a connection costs its `first` × the cost of what it
//! selects per item. (Depth stays the engine's limit: it is checked before anything else.)

use std::sync::Arc;

use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextValidation};
use async_graphql::{ServerError, ValidationResult};

/// The most a query may cost.
#[derive(Debug, Clone, Copy)]
pub struct CostLimit(pub usize);

impl ExtensionFactory for CostLimit {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(*self)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for CostLimit {
    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let measured = next.run(ctx).await?;
        match self.refusal(measured.complexity) {
            Some(message) => Err(vec![ServerError::new(message, None)]),
            None => Ok(measured),
        }
    }
}

impl CostLimit {
    /// Why a query of this cost is refused, if it is.
    pub fn refusal(&self, cost: usize) -> Option<String> {
        (cost > self.0).then(|| {
            format!(
                "the query costs {cost}, over the limit of {}: each field costs 1 and a \
                 connection costs its `first` × its fields; ask for smaller pages or fewer fields",
                self.0
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_cost_and_the_limit() {
        let limit = CostLimit(5000);
        assert_eq!(limit.refusal(5000), None);
        let message = limit.refusal(7200).expect("refused");
        assert!(
            message.contains("7200") && message.contains("5000"),
            "{message}"
        );
    }
}
