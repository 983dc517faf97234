import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../lib/api';
import { useQuery } from '../lib/hooks';
import { pickerStatus, searchTerm } from '../lib/picker';
import { Combobox } from '../ui/Combobox';
import { PreviewTenants, type PreviewTenantsResult } from './operations';

export type PickedTenant = PreviewTenantsResult['tenants']['nodes'][number];

/** How many matches are offered; more: type more of the name. */
const MATCHES = 20;
/** How long typing pauses before the search is sent. */
const DEBOUNCE_MS = 250;
/** The longest search the API takes (`tenants(nameContains:)`). */
const MAX_SEARCH = 100;

export interface TenantSearch {
  text: string;
  setText: (text: string) => void;
  /** Starts searching (the first time the matches open). */
  engage: () => void;
  matches: readonly PickedTenant[];
  /** The API has more matches than are offered. */
  more: boolean;
  /** Typing has not paused yet, or the answer is on its way. */
  pending: boolean;
  error: ApiError | null;
  reload: () => void;
}

/**
 * The tenants whose name contains what is typed (any case, `tenants(nameContains:)`),
 * asked for once typing pauses for a quarter of a second; nothing is asked before the
 * picker is first opened. Empty text: the oldest tenants.
 */
export function useTenantSearch(): TenantSearch {
  const [text, setText] = useState('');
  const [term, setTerm] = useState<string | null>(null);
  const [engaged, setEngaged] = useState(false);
  useEffect(() => {
    const timer = window.setTimeout(() => setTerm(searchTerm(text, MAX_SEARCH)), DEBOUNCE_MS);
    return () => window.clearTimeout(timer);
  }, [text]);
  const found = useQuery(PreviewTenants, { nameContains: term, first: MATCHES }, { skip: !engaged });
  return {
    text,
    setText,
    engage: () => setEngaged(true),
    matches: found.data?.tenants.nodes ?? [],
    more: found.data?.tenants.pageInfo.hasNextPage ?? false,
    pending: searchTerm(text, MAX_SEARCH) !== term || found.loading,
    error: found.error,
    reload: found.reload,
  };
}

/**
 * The tenant to preview against, found by name: type part of it, then choose among the
 * first 20 matches. Changing the text after a choice undoes the choice. The search's own
 * error is the owner's to show (`search.error`, with `search.reload` to try again).
 */
export function TenantPicker({ search, value, onChange, error, message }: { search: TenantSearch; value: PickedTenant | null; onChange: (tenant: PickedTenant | null) => void; error?: ApiError | null; message?: string | null }) {
  const [open, setOpen] = useState(false);
  const status = search.error && !search.pending ? 'The search failed.' : pickerStatus({ pending: search.pending, count: search.matches.length, more: search.more, noun: 'tenant' });
  return (
    <Combobox
      label="Tenant"
      name="tenantId"
      hint={value ? `Chosen: ${value.name} (${value.currency}).` : 'Type part of its name, then choose it.'}
      error={error}
      message={message}
      text={search.text}
      onText={(text) => {
        search.setText(text);
        if (value && text !== value.name) onChange(null);
      }}
      options={search.matches}
      optionKey={(t) => t.id}
      optionLabel={(t) => `${t.name} (${t.currency})`}
      onChoose={(t) => {
        search.setText(t.name);
        if (t.id !== value?.id) onChange(t);
      }}
      open={open}
      onOpenChange={(next) => {
        if (next) search.engage();
        setOpen(next);
      }}
      pending={search.pending}
      status={status}
      maxLength={MAX_SEARCH}
    />
  );
}
