import { useState } from 'preact/hooks';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';
import { CreateWebhookEndpoint, type WebhookEndpointsResult } from './operations';

type EventType = WebhookEndpointsResult['eventTypes'][number];

const FIELDS = ['url', 'description', 'eventTypes'];

/** Adds an endpoint: URL, description and the event types it takes (none: all). */
export function WebhookForm({ types, onCreated }: { types: EventType[]; onCreated: (url: string, secret: string) => void }) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  const create = useMutation(CreateWebhookEndpoint);
  const submit = async (e: Event) => {
    e.preventDefault();
    const target = url.trim();
    setProblem(/^https?:\/\/\S+$/i.test(target) ? null : 'Enter an http(s) URL such as https://example.com/hooks.');
    if (!/^https?:\/\/\S+$/i.test(target)) return;
    const r = await create.run({ input: { url: target, description: description.trim(), eventTypes: chosen } });
    if (!r) return;
    setUrl('');
    setDescription('');
    setChosen([]);
    onCreated(r.createWebhookEndpoint.endpoint.url, r.createWebhookEndpoint.secret ?? '');
  };
  const toggle = (name: string, on: boolean) => setChosen((c) => (on ? [...c, name] : c.filter((n) => n !== name)));
  return (
    <form class="card form-card form-wide" onSubmit={submit} noValidate aria-label="Add a webhook endpoint">
      <Field label="URL" name="url" error={create.error} message={problem} hint="A public http(s) address; redirects are not followed.">
        {(p) => <input {...p} type="url" autocomplete="off" placeholder="https://example.com/hooks/neocloud" value={url} onInput={(e) => setUrl(e.currentTarget.value)} />}
      </Field>
      <Field label="Description (optional)" name="description" error={create.error}>
        {(p) => <input {...p} type="text" autocomplete="off" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />}
      </Field>
      <EventTypeChoice types={types} chosen={chosen} onToggle={toggle} />
      <ErrorNotice error={unclaimed(create.error, FIELDS)} />
      <Button type="submit" variant="primary" pending={create.pending}>
        Add endpoint
      </Button>
    </form>
  );
}

function EventTypeChoice({ types, chosen, onToggle }: { types: EventType[]; chosen: string[]; onToggle: (name: string, on: boolean) => void }) {
  return (
    <fieldset class="field event-types">
      <legend>Event types</legend>
      <p class="field-hint">{chosen.length === 0 ? 'None chosen: every event type is sent.' : `${chosen.length} chosen.`}</p>
      <div class="check-grid">
        {types.map((t) => (
          <label class="check" key={t.name}>
            <input type="checkbox" checked={chosen.includes(t.name)} onChange={(e) => onToggle(t.name, e.currentTarget.checked)} />
            <span>
              <code>{t.name}</code>
              <span class="muted block small">{t.summary.replace(/`/g, '')}</span>
            </span>
          </label>
        ))}
      </div>
    </fieldset>
  );
}
