//! Placement invariants checked with proptest on small random fleets and random
//! sequences of place/commit, release, health and node-state changes: MIG instances never
//! overlap and start at valid slots; GPU, milli-GPU, GPU memory, CPU and memory are never
//! over-allocated; nothing new lands on a failed GPU or a node that is not active; gangs
//! are all or nothing; exclusivity holds; a release restores exactly the previous state
//! (aggregates included); preemption victims are spot only and suffice.

use std::collections::BTreeMap;

use neocloud_schema::mig::{MigProfile, SlotMask};
use proptest::prelude::*;

use crate::fleet::{Fleet, GpuMode, GpuSpec, Health, NodeSpec, NodeState};
use crate::ids::{AllocationKey, GpuRef, ModelSet, NodeId, TenantKey};
use crate::placement::{GpuShare, NoFit, Placement};
use crate::request::{Class, Exclusivity, MILLI_PER_GPU, Request, Shape, Topology, TopologyLevel};

const GPUS_PER_NODE: usize = 4;

fn fleet_of(modes: &[(GpuMode, bool)]) -> Fleet {
    // Nodes 0 and 1 share a multi-node NVLink domain; racks of three nodes.
    let specs = modes
        .iter()
        .enumerate()
        .map(|(i, &(mode, other_model))| NodeSpec {
            name: format!("n{i}"),
            region: "r".into(),
            zone: "z".into(),
            rack: format!("rack{}", i / 3),
            nvlink_domain: if i < 2 { "nvl".into() } else { format!("n{i}") },
            cpu_milli: 32_000,
            memory_mib: 262_144,
            state: NodeState::Active,
            reliability: None,
            gpus: vec![
                GpuSpec {
                    model: if other_model {
                        "A100".into()
                    } else {
                        "H100".into()
                    },
                    memory_mib: 81_920,
                    health: Health::Ok,
                    mode,
                };
                GPUS_PER_NODE
            ],
        })
        .collect();
    Fleet::new(specs).unwrap()
}

fn mode() -> impl Strategy<Value = GpuMode> {
    prop_oneof![
        Just(GpuMode::Whole),
        Just(GpuMode::Mig),
        Just(GpuMode::Shared)
    ]
}

fn topology() -> impl Strategy<Value = Topology> {
    (
        prop_oneof![
            Just(TopologyLevel::Node),
            Just(TopologyLevel::NvlinkDomain),
            Just(TopologyLevel::Rack),
            Just(TopologyLevel::Any)
        ],
        any::<bool>(),
    )
        .prop_map(|(level, required)| Topology { level, required })
}

fn models() -> impl Strategy<Value = ModelSet> {
    prop_oneof![
        3 => Just(ModelSet::ANY),
        1 => Just(ModelSet::of(&[crate::ids::ModelId(0)])),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (1u32..10, models(), topology(), 0u32..10_000, 0u64..70_000).prop_map(
            |(count, models, topology, cpu, mem)| Shape::WholeGpus {
                count,
                models,
                topology,
                cpu_milli_per_gpu: cpu,
                memory_mib_per_gpu: mem,
            }
        ),
        (0usize..6, models(), 0u32..8_000).prop_map(|(p, models, cpu)| Shape::Mig {
            profile: MigProfile::ALL[p],
            models,
            cpu_milli: cpu,
            memory_mib: 1024,
        }),
        (1u32..=1000, 0u64..40_000, models(), 0u32..8_000).prop_map(
            |(milli, gpu_mem, models, cpu)| Shape::Fractional {
                milli_gpu: milli,
                gpu_memory_mib: gpu_mem,
                models,
                cpu_milli: cpu,
                memory_mib: 4096,
            }
        ),
        (1u32..3, models(), topology()).prop_map(|(count, models, topology)| {
            Shape::WholeNodes {
                count,
                models,
                topology,
            }
        }),
        (0u32..20_000, 0u64..100_000).prop_map(|(cpu, mem)| Shape::Cpu {
            cpu_milli: cpu,
            memory_mib: mem,
        }),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    (
        0u128..3,
        prop_oneof![
            Just(Class::OnDemand),
            Just(Class::Reserved),
            Just(Class::Spot)
        ],
        prop_oneof![
            6 => Just(None),
            1 => Just(Some(Exclusivity::Node)),
            1 => Just(Some(Exclusivity::NvlinkDomain)),
        ],
        shape(),
    )
        .prop_map(|(tenant, class, exclusive, shape)| Request {
            tenant: TenantKey(tenant),
            class,
            exclusive,
            shape,
        })
}

#[derive(Debug, Clone)]
enum Op {
    Place(Request),
    PlaceThenRelease(Request),
    Release(usize),
    Health(usize, usize, Health),
    State(usize, NodeState),
}

fn op(nodes: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => request().prop_map(Op::Place),
        2 => request().prop_map(Op::PlaceThenRelease),
        2 => any::<usize>().prop_map(Op::Release),
        1 => (0..nodes, 0..GPUS_PER_NODE, prop_oneof![Just(Health::Ok), Just(Health::Degraded), Just(Health::Failed)])
            .prop_map(|(n, g, h)| Op::Health(n, g, h)),
        1 => (0..nodes, prop_oneof![Just(NodeState::Active), Just(NodeState::Draining), Just(NodeState::Down)])
            .prop_map(|(n, s)| Op::State(n, s)),
    ]
}

/// What the live allocations hold, per GPU and per node.
#[derive(Default)]
struct Books {
    whole: BTreeMap<GpuRef, u32>,
    masks: BTreeMap<GpuRef, SlotMask>,
    milli: BTreeMap<GpuRef, (u32, u64)>,
    cpu: BTreeMap<NodeId, (u32, u64)>,
}

/// What the live allocations hold, rebuilt from them alone, checked against capacity.
fn check_books(fleet: &Fleet) -> Result<(), TestCaseError> {
    let books = rebuild_books(fleet)?;
    for id in fleet.node_ids() {
        check_node_books(fleet, id, &books)?;
        check_exclusivity(fleet, id)?;
    }
    prop_assert_eq!(fleet.summaries(), fleet.rebuilt_summaries());
    Ok(())
}

/// The books from the live allocations alone; MIG slices must not overlap.
fn rebuild_books(fleet: &Fleet) -> Result<Books, TestCaseError> {
    let mut books = Books::default();
    for a in fleet.allocations() {
        for np in &a.placement.nodes {
            let e = books.cpu.entry(np.node).or_default();
            e.0 += np.cpu_milli;
            e.1 += np.memory_mib;
        }
        for (g, share) in a.placement.gpus() {
            match share {
                GpuShare::Whole => *books.whole.entry(g).or_default() += 1,
                GpuShare::Mig { profile, start } => {
                    prop_assert!(profile.valid_starts().contains(&start));
                    let m = books.masks.entry(g).or_default();
                    prop_assert!(!m.overlaps(profile.mask_at(start)), "MIG overlap on {g:?}");
                    *m = m.union(profile.mask_at(start));
                }
                GpuShare::Fraction {
                    milli: x,
                    memory_mib,
                } => {
                    let e = books.milli.entry(g).or_default();
                    e.0 += x;
                    e.1 += memory_mib;
                }
            }
        }
    }
    Ok(books)
}

/// Node `id`'s free state and every GPU's state agree with the books.
fn check_node_books(fleet: &Fleet, id: NodeId, books: &Books) -> Result<(), TestCaseError> {
    let n = &fleet.nodes[id.index()];
    let (c, m) = books.cpu.get(&id).copied().unwrap_or_default();
    prop_assert!(
        c <= n.cpu_milli && m <= n.memory_mib,
        "node {id:?} over-allocated"
    );
    prop_assert_eq!(n.free_cpu_milli, n.cpu_milli - c);
    prop_assert_eq!(n.free_memory_mib, n.memory_mib - m);
    for (i, gpu) in n.indexed_gpus() {
        let g = GpuRef { node: id, gpu: i };
        let w = books.whole.get(&g).copied().unwrap_or(0);
        let mask = books.masks.get(&g).copied().unwrap_or_default();
        let (x, gm) = books.milli.get(&g).copied().unwrap_or_default();
        prop_assert!(w <= 1, "GPU {g:?} given whole twice");
        prop_assert_eq!(gpu.holder.is_some(), w == 1);
        prop_assert_eq!(gpu.mig_used, mask);
        prop_assert_eq!((gpu.shared_milli, gpu.shared_memory_mib), (x, gm));
        prop_assert!(x <= MILLI_PER_GPU && gm <= gpu.memory_mib);
        prop_assert!(
            w == 0 || (mask == SlotMask::EMPTY && x == 0),
            "whole GPU {g:?} shared"
        );
    }
    Ok(())
}

/// Exclusivity: a node or domain held exclusively holds one tenant.
fn check_exclusivity(fleet: &Fleet, id: NodeId) -> Result<(), TestCaseError> {
    let n = &fleet.nodes[id.index()];
    let tenants: Vec<TenantKey> = n.allocs.iter().map(|a| a.tenant).collect();
    if let Some(t) = n.lock() {
        prop_assert!(
            tenants.iter().all(|&x| x == t),
            "node {id:?} exclusivity broken"
        );
    }
    let domain = fleet.vertex(n.domain);
    let holders: Vec<TenantKey> = domain
        .nodes
        .iter()
        .flat_map(|&d| fleet.nodes[d.index()].allocs.iter())
        .filter(|a| a.exclusive == Some(Exclusivity::NvlinkDomain))
        .map(|a| a.tenant)
        .collect();
    if let Some(&t) = holders.first() {
        for &d in &domain.nodes {
            prop_assert!(
                fleet.nodes[d.index()].only_tenant(t),
                "domain exclusivity broken"
            );
        }
    }
    Ok(())
}

/// What a fresh placement must be, before it is committed.
fn check_placement(fleet: &Fleet, req: &Request, p: &Placement) -> Result<(), TestCaseError> {
    for np in &p.nodes {
        let n = &fleet.nodes[np.node.index()];
        prop_assert_eq!(
            n.state,
            NodeState::Active,
            "placed on a node that is not active"
        );
        for g in &np.gpus {
            prop_assert!(
                n.gpus[usize::from(g.gpu)].health != Health::Failed,
                "placed on a failed GPU"
            );
        }
    }
    match req.shape {
        Shape::WholeGpus { count, .. } => {
            prop_assert_eq!(p.gpus().count(), count as usize, "gang not all or nothing");
        }
        Shape::WholeNodes { count, .. } => {
            prop_assert_eq!(p.nodes.len(), count as usize);
            prop_assert!(p.nodes.iter().all(|np| np.whole_node));
        }
        Shape::Mig { .. } | Shape::Fractional { .. } => prop_assert_eq!(p.gpus().count(), 1),
        Shape::Cpu { .. } => prop_assert_eq!(p.gpus().count(), 0),
    }
    for v in &p.victims {
        prop_assert!(req.class != Class::Spot, "spot preempted something");
        let a = fleet.allocation(*v);
        prop_assert!(
            a.is_some_and(|a| a.placement.class == Class::Spot),
            "a victim is not spot"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn placement_invariants_hold_over_any_sequence_of_changes(
        modes in proptest::collection::vec((mode(), proptest::bool::weighted(0.25)), 6),
        ops in proptest::collection::vec(op(6), 1..40),
    ) {
        let mut fleet = fleet_of(&modes);
        // Score against the mix of the requests to come, as the api would after a while.
        let shapes: Vec<Shape> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Place(r) | Op::PlaceThenRelease(r) => Some(r.shape),
                _ => None,
            })
            .collect();
        fleet.set_mix(crate::fractional::ShapeMix::observe(&shapes, 8));
        let mut live: Vec<AllocationKey> = Vec::new();
        let mut next = 1u128;
        for op in ops {
            match op {
                Op::Place(req) => {
                    if let Ok(p) = fleet.place(&req) {
                        check_placement(&fleet, &req, &p)?;
                        let key = AllocationKey(next);
                        next += 1;
                        // The victims suffice: a fresh placement always commits.
                        let preempted = fleet.commit(key, &p);
                        prop_assert!(preempted.is_ok(), "{:?}", preempted);
                        live.retain(|k| !p.victims.contains(k));
                        live.push(key);
                    }
                }
                Op::PlaceThenRelease(req) => {
                    if let Ok(p) = fleet.place(&req)
                        && p.victims.is_empty()
                    {
                        let before = fleet.clone();
                        let key = AllocationKey(next);
                        next += 1;
                        fleet.commit(key, &p).unwrap();
                        fleet.release(key).unwrap();
                        prop_assert!(fleet == before, "release did not restore the state");
                    }
                }
                Op::Release(i) => {
                    if !live.is_empty() {
                        let key = live.remove(i % live.len());
                        fleet.release(key).unwrap();
                    }
                }
                Op::Health(n, g, h) => fleet
                    .set_gpu_health(GpuRef { node: NodeId(n as u32), gpu: g as u8 }, h)
                    .unwrap(),
                Op::State(n, s) => fleet.set_node_state(NodeId(n as u32), s).unwrap(),
            }
            check_books(&fleet)?;
        }
    }

    #[test]
    fn a_request_that_gets_no_fit_leaves_nothing_half_done(
        modes in proptest::collection::vec((mode(), Just(false)), 6),
        reqs in proptest::collection::vec(request(), 1..20),
    ) {
        let mut fleet = fleet_of(&modes);
        for (i, req) in reqs.iter().enumerate() {
            let before = fleet.clone();
            match fleet.place(req) {
                Ok(p) => { fleet.commit(AllocationKey(i as u128), &p).unwrap(); }
                Err(NoFit::NoCapacity) | Err(NoFit::Invalid(_)) => prop_assert!(fleet == before),
            }
        }
    }
}
