//! The cost and depth limits, enforced after the engine has measured a valid query so
//! that a refusal says what the query cost (or how deep it is) and what the limit is (the
//! engine's own limits only say "too complex"). Each field costs 1; a connection costs its
//! `first` × the cost of what it selects per item. A request that only introspects is
//! held to the cost limit but not the depth limit: the standard introspection query (what
//! GraphiQL and client generators send) nests type references deeper than any query of
//! data, and its size is bounded by the schema's.

use std::sync::Arc;

use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextValidation};
use async_graphql::{ServerError, ValidationResult};

/// The limits a query is held to.
#[derive(Debug, Clone, Copy)]
pub struct CostLimits {
    pub complexity: usize,
    pub depth: usize,
}

/// Request data marking a request that only introspects (set by the HTTP transport).
#[derive(Debug, Clone, Copy)]
pub struct IntrospectionOnly;

impl ExtensionFactory for CostLimits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(*self)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for CostLimits {
    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let measured = next.run(ctx).await?;
        let introspection = ctx.data_opt::<IntrospectionOnly>().is_some();
        match self.refusal(measured.complexity, measured.depth, introspection) {
            Some(message) => Err(vec![ServerError::new(message, None)]),
            None => Ok(measured),
        }
    }
}

impl CostLimits {
    /// Why a query of this cost and depth is refused, if it is.
    pub fn refusal(&self, cost: usize, depth: usize, introspection: bool) -> Option<String> {
        if cost > self.complexity {
            return Some(format!(
                "the query costs {cost}, over the limit of {}: each field costs 1 and a \
                 connection costs its `first` × its fields; ask for smaller pages or fewer fields",
                self.complexity
            ));
        }
        (depth > self.depth && !introspection).then(|| {
            format!(
                "the query is nested {depth} deep, over the limit of {}",
                self.depth
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_cost_or_depth_and_the_limit() {
        let limits = CostLimits {
            complexity: 5000,
            depth: 12,
        };
        assert_eq!(limits.refusal(5000, 12, false), None);
        let message = limits.refusal(7200, 3, false).expect("refused");
        assert!(
            message.contains("7200") && message.contains("5000"),
            "{message}"
        );
        let message = limits.refusal(10, 13, false).expect("refused");
        assert!(
            message.contains("13") && message.contains("12"),
            "{message}"
        );
        assert_eq!(
            limits.refusal(10, 13, true),
            None,
            "introspection nests deeper"
        );
        assert!(limits.refusal(7200, 3, true).is_some());
    }
}
