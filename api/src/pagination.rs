//! Relay-style pages over tables whose primary key is a time-ordered UUID: `first` (at most
//! the configured maximum) rows after the cursor `after`, oldest first. A cursor is the
//! row's id; clients treat it as opaque.

use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Select,
};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};

pub const DEFAULT_PAGE_SIZE: u32 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub first: u32,
    pub after: Option<Uuid>,
}

#[derive(Debug)]
pub struct PageOf<T> {
    pub items: Vec<T>,
    pub has_next: bool,
    pub has_previous: bool,
}

impl Page {
    /// Validates GraphQL's `first`/`after`.
    pub fn from_args(first: Option<i32>, after: Option<&str>, max: u32) -> ApiResult<Page> {
        let first = match first {
            None => DEFAULT_PAGE_SIZE.min(max),
            Some(n) if n < 1 => {
                return Err(ApiError::invalid("first", "must be at least 1"));
            }
            Some(n) => match u32::try_from(n) {
                Ok(n) if n <= max => n,
                _ => {
                    return Err(ApiError::invalid(
                        "first",
                        format!("at most {max} items per page"),
                    ));
                }
            },
        };
        let after = after
            .map(|cursor| {
                Uuid::parse_str(cursor)
                    .map_err(|_| ApiError::invalid("after", "not a cursor from this API"))
            })
            .transpose()?;
        Ok(Page { first, after })
    }

    /// Runs `select` as one page ordered by `id`.
    pub async fn fetch<C, E>(
        self,
        conn: &C,
        select: Select<E>,
        id: E::Column,
    ) -> Result<PageOf<E::Model>, DbErr>
    where
        C: ConnectionTrait,
        E: EntityTrait,
    {
        let mut query = select.order_by_asc(id);
        if let Some(after) = self.after {
            query = query.filter(id.gt(after));
        }
        let mut items = query.limit(u64::from(self.first) + 1).all(conn).await?;
        let has_next = items.len() > self.first as usize;
        items.truncate(self.first as usize);
        Ok(PageOf {
            items,
            has_next,
            has_previous: self.after.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes_are_bounded_both_ways() {
        assert_eq!(Page::from_args(None, None, 100).expect("ok").first, 20);
        assert_eq!(
            Page::from_args(Some(100), None, 100).expect("ok").first,
            100
        );
        assert!(Page::from_args(Some(101), None, 100).is_err());
        assert!(Page::from_args(Some(0), None, 100).is_err());
        assert!(Page::from_args(Some(-5), None, 100).is_err());
        assert!(Page::from_args(Some(5), Some("garbage"), 100).is_err());
    }
}
