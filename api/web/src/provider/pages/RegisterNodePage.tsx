import { useState } from 'preact/hooks';
import { useMutation } from '../../lib/hooks';
import { Button } from '../../ui/Button';
import { Check } from '../../ui/Check';
import { CopyButton } from '../../ui/CopyButton';
import { Field, unclaimed } from '../../ui/Field';
import { Link } from '../../ui/Link';
import { ErrorNotice, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { SecretOnce } from '../../ui/SecretOnce';
import { RegisterOwnNode, type RegisterOwnNodeResult } from '../operations';
import { nodePath } from '../paths';
import { GPU_MODELS, gpuLineError, gpusOf } from '../registration';

type Registered = RegisterOwnNodeResult['registerNode'];

const PLACE = [
  ['hostname', 'Hostname', 'As its agent reports it, e.g. gpu-node-17.'],
  ['region', 'Region', 'e.g. eu-west.'],
  ['zone', 'Zone', 'e.g. eu-west-a.'],
  ['rack', 'Rack', 'e.g. r07.'],
  ['nvlinkDomain', 'NVLink domain', 'The GPUs that share NVLink: the node itself for an HGX board, or one name for every tray of an NVL72.'],
] as const;
type Place = Record<(typeof PLACE)[number][0], string>;
const FIELDS = ['hostname', 'region', 'zone', 'rack', 'nvlinkDomain', 'gpuModel', 'gpus', 'migEnabled', 'sharedGpus', 'provider'];

/**
 * Registers one of the provider's nodes: where it stands, its GPU model and its GPUs'
 * UUIDs. The node then waits for its agent's hardware report; its agent token (and NATS
 * credentials) are shown once.
 */
export function RegisterNodePage() {
  const [registered, setRegistered] = useState<Registered | null>(null);
  return (
    <Page title="Register a node" lead={<Link to="/">← Nodes</Link>}>
      {registered ? <Registered node={registered} onAnother={() => setRegistered(null)} /> : <RegisterForm onRegistered={setRegistered} />}
    </Page>
  );
}

function RegisterForm({ onRegistered }: { onRegistered: (r: Registered) => void }) {
  const register = useMutation(RegisterOwnNode);
  const [place, setPlace] = useState<Place>({ hostname: '', region: '', zone: '', rack: '', nvlinkDomain: '' });
  const [model, setModel] = useState<string>('H100');
  const [uuids, setUuids] = useState('');
  const [mig, setMig] = useState(false);
  const [shared, setShared] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const input = {
      ...place,
      nvlinkDomain: place.nvlinkDomain.trim() || place.hostname,
      gpuModel: model,
      gpus: gpusOf(uuids),
      migEnabled: mig,
      sharedGpus: shared,
    };
    const r = await register.run({ input });
    if (r) onRegistered(r.registerNode);
  };
  return (
    <Section title="The node">
      <p class="section-lead muted">A node takes no allocation until its agent reports exactly this hardware; what differs is shown on the node.</p>
      <form class="card form-card" onSubmit={submit} noValidate aria-label="Register a node">
        {PLACE.map(([name, label, hint]) => (
          <Field key={name} label={label} name={name} error={register.error} hint={name === 'nvlinkDomain' ? `${hint} Empty: the hostname.` : hint}>
            {(p) => <input {...p} type="text" maxLength={63} autocomplete="off" value={place[name]} onInput={(e) => setPlace({ ...place, [name]: e.currentTarget.value })} />}
          </Field>
        ))}
        <Field label="GPU model" name="gpuModel" error={register.error}>
          {(p) => (
            <select {...p} value={model} onChange={(e) => setModel(e.currentTarget.value)}>
              {GPU_MODELS.map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="GPU UUIDs" name="gpus" error={register.error} message={gpuLineError(register.error)} hint="One per line, in NVML's index order (nvidia-smi -L lists them): GPU-…">
          {(p) => <textarea {...p} rows={8} spellcheck={false} value={uuids} onInput={(e) => setUuids(e.currentTarget.value)} />}
        </Field>
        <Check label="MIG mode on (the GPUs are sold as MIG slices)" checked={mig} onChange={setMig} />
        <Check label="Time-shared (the GPUs are sold as fractions)" checked={shared} onChange={setShared} />
        <ErrorNotice error={unclaimed(register.error, FIELDS)} />
        <Button type="submit" variant="primary" pending={register.pending}>
          Register node
        </Button>
      </form>
    </Section>
  );
}

/** The node just registered: its agent's secrets, shown once, and what happens next. */
function Registered({ node, onAnother }: { node: Registered; onAnother: () => void }) {
  return (
    <Section title={`${node.node.hostname} is registered`}>
      <Notice tone="success" title="Waiting for its agent">
        Start the agent on the node with this token (<code>neocloud-agent run --token …</code>, docs/agent.md). The node takes allocations once the agent has reported the registered hardware.
      </Notice>
      <div class="card form-card">
        <SecretOnce label="Agent token" value={node.agentToken} note="Put it where the node's agent reads it (NEOCLOUD_AGENT_TOKEN)." onDone={onAnother} />
        {node.natsCredentials && (
          <div class="field">
            <label for="nats-credentials">NATS credentials (shown once)</label>
            <textarea id="nats-credentials" rows={6} readOnly spellcheck={false} value={node.natsCredentials} />
            <div class="inline-actions">
              <CopyButton text={node.natsCredentials} what="the NATS credentials" />
            </div>
          </div>
        )}
      </div>
      <p>
        <Link to={nodePath(node.node.id)}>Open {node.node.hostname}</Link>
      </p>
    </Section>
  );
}
