import { useEffect, useState } from 'preact/hooks';
import type { PageComponent } from './AppShell';
import { Notice, Loading } from './Notice';

/**
 * A page whose code loads when it is first shown (`() => import('./pages/UsagePage')…`):
 * its own chunk, so the first page a user opens does not carry it. Once loaded it stays.
 */
export function lazyPage(load: () => Promise<PageComponent>): PageComponent {
  let loaded: PageComponent | null = null;
  let loading: Promise<PageComponent> | null = null;
  return function LazyPage(props) {
    const [, setReady] = useState(false);
    const [failed, setFailed] = useState(false);
    useEffect(() => {
      if (loaded) return;
      let live = true;
      loading ??= load();
      loading
        .then((page) => {
          loaded = page;
          if (live) setReady(true);
        })
        .catch(() => {
          loading = null;
          if (live) setFailed(true);
        });
      return () => {
        live = false;
      };
    }, []);
    const Page = loaded;
    if (Page) return <Page {...props} />;
    if (failed) {
      return (
        <Notice tone="danger" title="This page could not be loaded">
          <p>The connection may have dropped, or neocloud was updated since this tab opened.</p>
          <button type="button" class="btn btn-secondary btn-small" onClick={() => window.location.reload()}>
            Reload
          </button>
        </Notice>
      );
    }
    return <Loading label="Loading the page…" />;
  };
}
