import { useState } from 'preact/hooks';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';
import { SecretOnce } from '../ui/SecretOnce';
import { CreateOwnKey } from './operations';

/** Creates another key of the provider, with a label; shows the key itself once. */
export function NewKey({ providerId, onCreated }: { providerId: string; onCreated: () => void }) {
  const [label, setLabel] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const create = useMutation(CreateOwnKey);
  const submit = async (e: Event) => {
    e.preventDefault();
    const r = await create.run({ providerId, label: label.trim() || null });
    if (!r) return;
    setSecret(r.createProviderKey.apiKey);
    setLabel('');
    onCreated();
  };
  if (secret) {
    return (
      <div class="card form-card">
        <SecretOnce label="New provider key" value={secret} note="Store the key where your scripts or node registration read it, e.g. a secret manager." onDone={() => setSecret(null)} />
      </div>
    );
  }
  return (
    <form class="card form-card" onSubmit={submit} noValidate aria-label="Create a provider key">
      <Field label="Label" name="label" error={create.error} hint="What the key is for, e.g. node-registration (at most 100 characters).">
        {(p) => <input {...p} type="text" maxLength={100} autocomplete="off" value={label} onInput={(e) => setLabel(e.currentTarget.value)} />}
      </Field>
      <ErrorNotice error={unclaimed(create.error, ['label'])} />
      <Button type="submit" variant="primary" pending={create.pending}>
        Create key
      </Button>
    </form>
  );
}
