import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Notice, Loading } from './Notice';

/** A page's props (`PageComponent`'s): the route's parameters. */
type PageProps = { params: Record<string, string> };

/**
 * A page whose code loads when it is first shown (`() => import('./pages/UsagePage')…`):
 * its own chunk, so the first page a user opens does not carry it. Once loaded it stays.
 * (Any component, a page's or another seldom shown screen's, such as a second-factor setup.)
 */
export function lazyPage<P extends object = PageProps>(load: () => Promise<ComponentType<P>>): ComponentType<P> {
  let loaded: ComponentType<P> | null = null;
  let loading: Promise<ComponentType<P>> | null = null;
  return function LazyPage(props: P) {
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
