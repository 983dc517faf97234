import { useState } from 'preact/hooks';
import type { Role } from '../gql/schema';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';
import { SecretOnce } from '../ui/SecretOnce';
import { CreateApiKey } from './operations';
import { RoleChoice } from './RoleChoice';

/** Creates a key with a label and a role; shows the key itself once. */
export function NewApiKey({ roles, onCreated }: { roles: readonly Role[]; onCreated: () => void }) {
  const [label, setLabel] = useState('');
  const [role, setRole] = useState<Role>(roles.includes('TENANT_MEMBER') ? 'TENANT_MEMBER' : (roles[0] ?? 'TENANT_MEMBER'));
  const [secret, setSecret] = useState<string | null>(null);
  const create = useMutation(CreateApiKey);
  const submit = async (e: Event) => {
    e.preventDefault();
    const r = await create.run({ role, label: label.trim() || null });
    if (!r) return;
    setSecret(r.createApiKey.apiKey);
    setLabel('');
    onCreated();
  };
  if (secret) {
    return (
      <div class="card form-card">
        <SecretOnce label="New API key" value={secret} note="Store the key where your scripts read it, e.g. a secret manager." onDone={() => setSecret(null)} />
      </div>
    );
  }
  return (
    <form class="card form-card" onSubmit={submit} noValidate aria-label="Create an API key">
      <Field label="Label" name="label" error={create.error} hint="What the key is for, e.g. ci-runner (at most 100 characters).">
        {(p) => <input {...p} type="text" maxLength={100} autocomplete="off" value={label} onInput={(e) => setLabel(e.currentTarget.value)} />}
      </Field>
      <RoleChoice legend="Role" roles={roles} value={role} onChange={setRole} error={create.error} />
      <ErrorNotice error={unclaimed(create.error, ['label', 'role'])} />
      <Button type="submit" variant="primary" pending={create.pending}>
        Create key
      </Button>
    </form>
  );
}
