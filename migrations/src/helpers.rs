//! Small builders shared by migrations (they never change behaviour once a migration
//! has shipped: a migration that needs something else gets a new helper).

use sea_orm_migration::prelude::*;

/// A foreign key from `from.col` to `to.id`.
pub(crate) fn fk(
    from: impl IntoIden + 'static,
    col: impl IntoIden + 'static,
    to: impl IntoIden + 'static,
    to_col: impl IntoIden + 'static,
) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .from_tbl(from)
        .from_col(col)
        .to_tbl(to)
        .to_col(to_col)
        .on_delete(ForeignKeyAction::Restrict)
        .to_owned()
}

pub(crate) fn index(
    name: &str,
    table: impl IntoIden + 'static,
    cols: Vec<DynIden>,
    unique: bool,
) -> IndexCreateStatement {
    let mut stmt = Index::create();
    stmt.name(name).table(table);
    for col in cols {
        stmt.col(col);
    }
    if unique {
        stmt.unique();
    }
    stmt.to_owned()
}
