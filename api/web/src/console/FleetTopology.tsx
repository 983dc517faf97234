import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { sum } from '../lib/decimal';
import { usePaged, useQuery } from '../lib/hooks';
import { Badge, StatusBadge } from '../ui/Badge';
import { LoadMore } from '../ui/DataTable';
import { Link } from '../ui/Link';
import { ErrorNotice, Loading } from '../ui/Notice';
import { GpuChips } from './node';
import { DomainNodes, FleetTopology as FleetTopologyQuery, type FleetTopologyResult } from './operations';
import { ShareBar, shareOf } from './share';

type Domain = FleetTopologyResult['fleetTopology'][number];

/** What a level of the tree holds: its domains added up. */
interface Counts {
  nodes: number;
  draining: number;
  down: number;
  gpus: number;
  degraded: number;
  failed: number;
  allocated: string;
}

interface Rack {
  name: string;
  domains: Domain[];
}

interface Region {
  name: string;
  racks: Rack[];
}

const NODES_PER_DOMAIN = 50;

/**
 * The fleet as a tree: region → rack → NVLink domain, with counts at each level; a domain
 * opened loads its nodes (and only then), each with its GPUs' health. `generation`
 * changes when a node changed elsewhere on the page: the counts and open domains reload.
 */
export function FleetTopology({ generation }: { generation: number }) {
  const { data, error, loading, reload } = useQuery(FleetTopologyQuery, {}, { pollMs: 30_000 });
  const first = useRef(generation);
  useEffect(() => {
    if (generation !== first.current) reload();
  }, [generation, reload]);
  if (error && !data) return <ErrorNotice error={error} onRetry={reload} />;
  if (!data) return loading ? <Loading label="Loading the topology…" /> : null;
  const regions = tree(data.fleetTopology);
  if (regions.length === 0) return <p class="empty">No nodes are registered.</p>;
  return (
    <>
      <ErrorNotice error={error} onRetry={reload} />
      <ul class="tree" aria-label="Regions">
        {regions.map((region) => (
          <li key={region.name}>
            <Branch kind="Region" name={region.name} counts={countsOf(region.racks.flatMap((r) => r.domains))} detail={`${region.racks.length} ${plural(region.racks.length, 'rack')}`} class="tree-region">
              <ul class="tree-level" aria-label={`Racks in ${region.name}`}>
                {region.racks.map((rack) => (
                  <li key={rack.name}>
                    <Branch kind="Rack" name={rack.name} counts={countsOf(rack.domains)} detail={`${rack.domains.length} NVLink ${plural(rack.domains.length, 'domain')}`}>
                      <ul class="tree-level" aria-label={`NVLink domains in rack ${rack.name}`}>
                        {rack.domains.map((d) => (
                          <li key={d.nvlinkDomain}>
                            <Branch kind="NVLink domain" name={d.nvlinkDomain} counts={countsOf([d])} detail={d.gpuModels.join(', ')}>
                              <DomainNodeList domain={d} generation={generation} />
                            </Branch>
                          </li>
                        ))}
                      </ul>
                    </Branch>
                  </li>
                ))}
              </ul>
            </Branch>
          </li>
        ))}
      </ul>
    </>
  );
}

/** Regions, racks and domains in the API's order (region, rack, domain). */
function tree(domains: readonly Domain[]): Region[] {
  const regions: Region[] = [];
  for (const d of domains) {
    let region = regions.find((r) => r.name === d.region);
    if (!region) regions.push((region = { name: d.region, racks: [] }));
    let rack = region.racks.find((r) => r.name === d.rack);
    if (!rack) region.racks.push((rack = { name: d.rack, domains: [] }));
    rack.domains.push(d);
  }
  return regions;
}

function countsOf(domains: readonly Domain[]): Counts {
  const add = (pick: (d: Domain) => number) => domains.reduce((n, d) => n + pick(d), 0);
  return {
    nodes: add((d) => d.nodes),
    draining: add((d) => d.nodesDraining),
    down: add((d) => d.nodesDown),
    gpus: add((d) => d.gpus),
    degraded: add((d) => d.gpusDegraded),
    failed: add((d) => d.gpusFailed),
    allocated: sum(domains.map((d) => d.allocatedGpus)),
  };
}

function plural(n: number, word: string): string {
  return n === 1 ? word : `${word}s`;
}

interface BranchProps {
  kind: string;
  name: string;
  counts: Counts;
  detail: string;
  class?: string;
  children: ComponentChildren;
}

/** A native disclosure whose content is rendered only while it is open. */
function Branch({ kind, name, counts, detail, class: cls, children }: BranchProps) {
  const [open, setOpen] = useState(false);
  return (
    <details class={`tree-branch${cls ? ` ${cls}` : ''}`} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>
        <span class="tree-label">
          <span class="tree-kind">{kind}</span> <strong class="tree-name">{name}</strong>
        </span>
        <CountsLine counts={counts} detail={detail} />
      </summary>
      {open && <div class="tree-body">{children}</div>}
    </details>
  );
}

function CountsLine({ counts: c, detail }: { counts: Counts; detail: string }) {
  return (
    <span class="tree-counts">
      <span class="muted">{`${detail ? `${detail} · ` : ''}${c.nodes} ${plural(c.nodes, 'node')} · ${c.gpus} GPUs · ${c.allocated} allocated`}</span>
      <ShareBar share={shareOf(c.allocated, c.gpus)} />
      {(c.draining > 0 || c.down > 0 || c.degraded > 0 || c.failed > 0) && (
        <span class="badges">
          {c.draining > 0 && <Badge tone="warn">{`${c.draining} draining`}</Badge>}
          {c.down > 0 && <Badge tone="bad">{`${c.down} down`}</Badge>}
          {c.degraded > 0 && <Badge tone="warn">{`${c.degraded} GPU${c.degraded === 1 ? '' : 's'} degraded`}</Badge>}
          {c.failed > 0 && <Badge tone="bad">{`${c.failed} GPU${c.failed === 1 ? '' : 's'} failed`}</Badge>}
        </span>
      )}
    </span>
  );
}

/** The nodes of one domain (loaded when it opens), each with its GPUs. */
function DomainNodeList({ domain: d, generation }: { domain: Domain; generation: number }) {
  const nodes = usePaged(DomainNodes, { region: d.region, rack: d.rack, nvlinkDomain: d.nvlinkDomain, first: NODES_PER_DOMAIN }, (r) => r.nodes);
  const first = useRef(generation);
  const { reload } = nodes;
  useEffect(() => {
    if (generation !== first.current) reload();
  }, [generation, reload]);
  if (nodes.loading && nodes.items.length === 0) return <Loading label={`Loading the nodes of ${d.nvlinkDomain}…`} />;
  return (
    <>
      <ErrorNotice error={nodes.error} onRetry={nodes.reload} />
      <ul class="tree-nodes" aria-label={`Nodes in NVLink domain ${d.nvlinkDomain}`} aria-busy={nodes.loading || undefined}>
        {nodes.items.map((n) => (
          <li key={n.id} class="tree-node">
            <Link to={`/nodes/${n.id}`} class="tree-host">
              {n.hostname}
            </Link>
            <StatusBadge value={n.state} />
            <span class="muted small">{`${n.gpus.length} × ${n.gpuModel}`}</span>
            <GpuChips host={n.hostname} gpus={n.gpus} />
          </li>
        ))}
      </ul>
      {(nodes.hasMore || nodes.items.length > NODES_PER_DOMAIN) && <LoadMore hasMore={nodes.hasMore} loading={nodes.loading} onLoadMore={nodes.loadMore} count={nodes.items.length} />}
    </>
  );
}
