//! Behaviour of `Fleet::place` and `Fleet::commit`, one scenario per test.

use neocloud_schema::mig::MigProfile;

use crate::fleet::{Fleet, GpuMode, Health, NodeState};
use crate::ids::{AllocationKey, GpuRef, ModelSet, NodeId, TenantKey};
use crate::placement::{GpuShare, NoFit};
use crate::policy::{Policy, PolicyKind};
use crate::request::{Class, Exclusivity, Request, Shape, Topology, TopologyLevel};
use crate::testkit::{hgx_fleet, node};

fn gpus(count: u32, topology: Topology) -> Shape {
    Shape::WholeGpus {
        count,
        models: ModelSet::ANY,
        topology,
        cpu_milli_per_gpu: 0,
        memory_mib_per_gpu: 0,
    }
}

fn one_gpu() -> Shape {
    gpus(1, Topology::ANY)
}

fn commit(fleet: &mut Fleet, key: u128, req: &Request) -> crate::placement::Placement {
    let p = fleet.place(req).unwrap();
    fleet.commit(AllocationKey(key), &p).unwrap();
    p
}

#[test]
fn a_single_gpu_goes_beside_others_and_keeps_empty_nodes_whole() {
    let mut fleet = hgx_fleet(1, 3);
    let t = TenantKey(1);
    let first = commit(&mut fleet, 1, &Request::new(t, one_gpu()));
    let second = commit(&mut fleet, 2, &Request::new(t, one_gpu()));
    assert_eq!(first.nodes[0].node, second.nodes[0].node);
    assert_ne!(first.nodes[0].gpus[0].gpu, second.nodes[0].gpus[0].gpu);
}

#[test]
fn eight_gpus_in_one_nvlink_domain_take_one_whole_node() {
    let mut fleet = hgx_fleet(1, 2);
    commit(&mut fleet, 1, &Request::new(TenantKey(1), one_gpu()));
    let p = fleet
        .place(&Request::new(
            TenantKey(1),
            gpus(8, Topology::required(TopologyLevel::NvlinkDomain)),
        ))
        .unwrap();
    assert_eq!(p.nodes.len(), 1);
    assert_eq!(p.nodes[0].gpus.len(), 8);
    assert_eq!(p.nodes[0].node, NodeId(1));
}

#[test]
fn a_gang_larger_than_a_rack_fills_whole_racks_before_spilling() {
    let mut fleet = hgx_fleet(3, 2);
    // Make rack 0 partly used: the 16-GPU gang must take an untouched rack whole.
    commit(&mut fleet, 1, &Request::new(TenantKey(9), one_gpu()));
    let p = fleet
        .place(&Request::new(
            TenantKey(1),
            gpus(16, Topology::required(TopologyLevel::Rack)),
        ))
        .unwrap();
    let racks: std::collections::BTreeSet<_> = p
        .nodes
        .iter()
        .map(|np| {
            fleet
                .node_name(np.node)
                .unwrap()
                .split('n')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(racks.len(), 1);
    assert_eq!(p.nodes.iter().map(|np| np.gpus.len()).sum::<usize>(), 16);
    let big = fleet
        .place(&Request::new(
            TenantKey(1),
            gpus(40, Topology::preferred(TopologyLevel::Rack)),
        ))
        .unwrap();
    assert_eq!(big.nodes.iter().map(|np| np.gpus.len()).sum::<usize>(), 40);
}

#[test]
fn a_required_rack_gang_that_no_rack_holds_does_not_fit() {
    let fleet = hgx_fleet(2, 2);
    let req = Request::new(
        TenantKey(1),
        gpus(17, Topology::required(TopologyLevel::Rack)),
    );
    assert_eq!(fleet.place(&req), Err(NoFit::NoCapacity));
    let loose = Request::new(
        TenantKey(1),
        gpus(17, Topology::preferred(TopologyLevel::Rack)),
    );
    assert!(fleet.place(&loose).is_ok());
}

#[test]
fn failed_gpus_and_draining_nodes_are_never_used() {
    let mut fleet = hgx_fleet(1, 2);
    for g in 0..8 {
        fleet
            .set_gpu_health(
                GpuRef {
                    node: NodeId(0),
                    gpu: g,
                },
                Health::Failed,
            )
            .unwrap();
    }
    fleet
        .set_node_state(NodeId(1), NodeState::Draining)
        .unwrap();
    assert_eq!(
        fleet.place(&Request::new(TenantKey(1), one_gpu())),
        Err(NoFit::NoCapacity)
    );
    fleet.set_node_state(NodeId(1), NodeState::Active).unwrap();
    let p = fleet.place(&Request::new(TenantKey(1), one_gpu())).unwrap();
    assert_eq!(p.nodes[0].node, NodeId(1));
}

#[test]
fn degraded_gpus_are_used_only_when_nothing_healthy_fits() {
    let mut fleet = hgx_fleet(1, 1);
    for g in 0..7 {
        fleet
            .set_gpu_health(
                GpuRef {
                    node: NodeId(0),
                    gpu: g,
                },
                Health::Degraded,
            )
            .unwrap();
    }
    let p = commit(&mut fleet, 1, &Request::new(TenantKey(1), one_gpu()));
    assert_eq!(p.nodes[0].gpus[0].gpu, 7);
    assert!(!p.degraded);
    let p = fleet.place(&Request::new(TenantKey(1), one_gpu())).unwrap();
    assert!(p.degraded);
}

#[test]
fn mig_requests_take_mig_gpus_at_starts_that_keep_large_profiles_possible() {
    let mut fleet = Fleet::new(vec![
        node("whole", "k", "whole", "H100", 1, GpuMode::Whole),
        node("mig", "k", "mig", "H100", 1, GpuMode::Mig),
    ])
    .unwrap();
    let mig = |profile| Shape::Mig {
        profile,
        models: ModelSet::ANY,
        cpu_milli: 0,
        memory_mib: 0,
    };
    let p = commit(
        &mut fleet,
        1,
        &Request::new(TenantKey(1), mig(MigProfile::ThreeG)),
    );
    assert_eq!(p.nodes[0].node, NodeId(1));
    assert_eq!(
        p.nodes[0].gpus[0].share,
        GpuShare::Mig {
            profile: MigProfile::ThreeG,
            start: 4
        }
    );
    let p = commit(
        &mut fleet,
        2,
        &Request::new(TenantKey(1), mig(MigProfile::FourG)),
    );
    assert_eq!(
        p.nodes[0].gpus[0].share,
        GpuShare::Mig {
            profile: MigProfile::FourG,
            start: 0
        }
    );
    assert_eq!(
        fleet.place(&Request::new(TenantKey(1), mig(MigProfile::OneG))),
        Err(NoFit::NoCapacity)
    );
    // A whole-GPU request never lands on the MIG GPU.
    let p = fleet.place(&Request::new(TenantKey(1), one_gpu())).unwrap();
    assert_eq!(p.nodes[0].node, NodeId(0));
}

#[test]
fn a_node_exclusive_tenant_keeps_other_tenants_out() {
    let mut fleet = hgx_fleet(1, 1);
    let mine = Request::new(TenantKey(1), one_gpu()).with_exclusive(Exclusivity::Node);
    commit(&mut fleet, 1, &mine);
    assert_eq!(
        fleet.place(&Request::new(TenantKey(2), one_gpu())),
        Err(NoFit::NoCapacity)
    );
    assert!(fleet.place(&Request::new(TenantKey(1), one_gpu())).is_ok());
    fleet.release(AllocationKey(1)).unwrap();
    commit(&mut fleet, 2, &Request::new(TenantKey(2), one_gpu()));
    assert_eq!(fleet.place(&mine), Err(NoFit::NoCapacity));
}

#[test]
fn domain_exclusivity_covers_every_node_of_the_domain() {
    let mut fleet = Fleet::new(vec![
        node("a", "k", "nvl", "GB200", 4, GpuMode::Whole),
        node("b", "k", "nvl", "GB200", 4, GpuMode::Whole),
    ])
    .unwrap();
    let mine = Request::new(TenantKey(1), one_gpu()).with_exclusive(Exclusivity::NvlinkDomain);
    commit(&mut fleet, 1, &mine);
    assert_eq!(
        fleet.place(&Request::new(TenantKey(2), one_gpu())),
        Err(NoFit::NoCapacity)
    );
    let p = fleet
        .place(&Request::new(TenantKey(1), gpus(4, Topology::ANY)))
        .unwrap();
    assert_eq!(p.nodes[0].gpus.len(), 4);
}

#[test]
fn on_demand_preempts_spot_only_when_nothing_else_fits_and_spot_never_does() {
    let mut fleet = hgx_fleet(1, 1);
    let spot = Request::new(TenantKey(2), gpus(6, Topology::ANY)).with_class(Class::Spot);
    commit(&mut fleet, 1, &spot);
    commit(&mut fleet, 2, &Request::new(TenantKey(3), one_gpu()));
    let small = fleet.place(&Request::new(TenantKey(1), one_gpu())).unwrap();
    assert!(small.victims.is_empty());
    let big = Request::new(TenantKey(1), gpus(4, Topology::ANY));
    let p = fleet.place(&big).unwrap();
    assert_eq!(p.victims, vec![AllocationKey(1)]);
    assert_eq!(
        fleet.place(&big.with_class(Class::Spot)),
        Err(NoFit::NoCapacity)
    );
    let preempted = fleet.commit(AllocationKey(3), &p).unwrap();
    assert_eq!(preempted.len(), 1);
    assert!(fleet.allocation(AllocationKey(1)).is_none());
    // The on-demand allocation is never a victim.
    let again = fleet.place(&Request::new(TenantKey(1), gpus(8, Topology::ANY)));
    assert_eq!(again, Err(NoFit::NoCapacity));
}

#[test]
fn releasing_restores_the_aggregates_exactly() {
    let mut fleet = hgx_fleet(2, 2);
    let before = fleet.clone();
    commit(
        &mut fleet,
        1,
        &Request::new(TenantKey(1), gpus(12, Topology::ANY)),
    );
    commit(&mut fleet, 2, &Request::new(TenantKey(2), one_gpu()));
    assert_eq!(fleet.summaries(), fleet.rebuilt_summaries());
    fleet.release(AllocationKey(2)).unwrap();
    fleet.release(AllocationKey(1)).unwrap();
    assert_eq!(fleet, before);
}

#[test]
fn available_counts_instances_from_the_aggregates() {
    let mut fleet = hgx_fleet(1, 2);
    let four = gpus(4, Topology::required(TopologyLevel::Node));
    assert_eq!(fleet.available(&one_gpu()), 16);
    assert_eq!(fleet.available(&four), 4);
    commit(&mut fleet, 1, &Request::new(TenantKey(1), one_gpu()));
    assert_eq!(fleet.available(&one_gpu()), 15);
    assert_eq!(fleet.available(&four), 3);
    let nodes = Shape::WholeNodes {
        count: 1,
        models: ModelSet::ANY,
        topology: Topology::ANY,
    };
    assert_eq!(fleet.available(&nodes), 1);
}

#[test]
fn a_commit_that_no_longer_fits_changes_nothing() {
    let mut fleet = hgx_fleet(1, 1);
    let req = Request::new(TenantKey(1), gpus(8, Topology::ANY));
    let p = fleet.place(&req).unwrap();
    fleet.commit(AllocationKey(1), &p).unwrap();
    let before = fleet.clone();
    assert!(fleet.commit(AllocationKey(2), &p).is_err());
    assert!(fleet.commit(AllocationKey(1), &p).is_err());
    assert_eq!(fleet, before);
}

#[test]
fn whole_nodes_take_idle_nodes_only() {
    let mut fleet = hgx_fleet(1, 3);
    commit(&mut fleet, 1, &Request::new(TenantKey(1), one_gpu()));
    let nodes = |count| Shape::WholeNodes {
        count,
        models: ModelSet::ANY,
        topology: Topology::ANY,
    };
    let p = fleet.place(&Request::new(TenantKey(2), nodes(2))).unwrap();
    assert_eq!(p.nodes.len(), 2);
    assert!(p.nodes.iter().all(|np| np.whole_node && np.gpus.len() == 8));
    assert_eq!(
        fleet.place(&Request::new(TenantKey(2), nodes(3))),
        Err(NoFit::NoCapacity)
    );
}

#[test]
fn a_fraction_shares_a_gpu_and_prefers_the_tightest_one() {
    let mut fleet = Fleet::new(vec![node("l", "k", "l", "L40S", 2, GpuMode::Shared)]).unwrap();
    let frac = |milli| Shape::Fractional {
        milli_gpu: milli,
        gpu_memory_mib: 1024,
        models: ModelSet::ANY,
        cpu_milli: 1000,
        memory_mib: 1024,
    };
    let a = commit(&mut fleet, 1, &Request::new(TenantKey(1), frac(600)));
    let b = commit(&mut fleet, 2, &Request::new(TenantKey(2), frac(300)));
    assert_eq!(a.nodes[0].gpus[0].gpu, b.nodes[0].gpus[0].gpu);
    assert_eq!(
        fleet.node_free(NodeId(0)).unwrap().gpu_free_milli,
        vec![100, 1000]
    );
    // A whole GPU still fits on the untouched shared GPU.
    assert!(fleet.place(&Request::new(TenantKey(3), one_gpu())).is_ok());
}

#[test]
fn the_same_request_on_the_same_fleet_gets_the_same_answer() {
    let mut fleet = hgx_fleet(3, 3);
    commit(
        &mut fleet,
        1,
        &Request::new(TenantKey(1), gpus(5, Topology::ANY)),
    );
    let req = Request::new(TenantKey(2), gpus(3, Topology::ANY));
    assert_eq!(fleet.place(&req), fleet.clone().place(&req));
}

#[test]
fn a_request_for_no_gpus_is_invalid() {
    let fleet = hgx_fleet(1, 1);
    assert!(matches!(
        fleet.place(&Request::new(TenantKey(1), gpus(0, Topology::ANY))),
        Err(NoFit::Invalid(_))
    ));
}

#[test]
fn a_fraction_goes_to_the_gpu_it_fills_best_even_when_it_is_not_the_first() {
    let mut fleet = Fleet::new(vec![node("l", "k", "l", "L40S", 2, GpuMode::Shared)]).unwrap();
    let on_second = crate::placement::Placement {
        tenant: TenantKey(1),
        class: Class::OnDemand,
        exclusive: None,
        nodes: vec![crate::placement::NodePlacement {
            node: NodeId(0),
            cpu_milli: 0,
            memory_mib: 0,
            whole_node: false,
            gpus: vec![crate::placement::GpuGrant {
                gpu: 1,
                share: GpuShare::Fraction {
                    milli: 600,
                    memory_mib: 0,
                },
            }],
        }],
        victims: Vec::new(),
        degraded: false,
    };
    fleet.commit(AllocationKey(1), &on_second).unwrap();
    let frac = Shape::Fractional {
        milli_gpu: 300,
        gpu_memory_mib: 0,
        models: ModelSet::ANY,
        cpu_milli: 0,
        memory_mib: 0,
    };
    let p = fleet.place(&Request::new(TenantKey(2), frac)).unwrap();
    assert_eq!(p.nodes[0].gpus[0].gpu, 1);
}

fn whole_nodes(count: u32) -> Shape {
    Shape::WholeNodes {
        count,
        models: ModelSet::ANY,
        topology: Topology::ANY,
    }
}

#[test]
fn a_whole_node_order_takes_a_plain_node_before_a_mig_or_shared_one() {
    let mut fleet = Fleet::new(vec![
        node("mig", "k", "mig", "H100", 8, GpuMode::Mig),
        node("shared", "k", "shared", "H100", 8, GpuMode::Shared),
        node("plain", "k", "plain", "H100", 8, GpuMode::Whole),
    ])
    .unwrap();
    let p = commit(&mut fleet, 1, &Request::new(TenantKey(1), whole_nodes(1)));
    assert_eq!(p.nodes[0].node, NodeId(2), "the plain node");
    // Only when no plain node is free does bare metal take a MIG or shared node.
    let p = fleet
        .place(&Request::new(TenantKey(1), whole_nodes(1)))
        .unwrap();
    assert_ne!(p.nodes[0].node, NodeId(2));
    fleet.release(AllocationKey(1)).unwrap();
    // A gang of nodes takes the plain ones too.
    let mut fleet = Fleet::new(vec![
        node("mig-a", "k", "mig-a", "H100", 8, GpuMode::Mig),
        node("mig-b", "k", "mig-b", "H100", 8, GpuMode::Mig),
        node("plain-a", "k", "plain-a", "H100", 8, GpuMode::Whole),
        node("plain-b", "k", "plain-b", "H100", 8, GpuMode::Whole),
    ])
    .unwrap();
    let p = commit(&mut fleet, 1, &Request::new(TenantKey(1), whole_nodes(2)));
    let mut taken: Vec<NodeId> = p.nodes.iter().map(|np| np.node).collect();
    taken.sort();
    assert_eq!(taken, vec![NodeId(2), NodeId(3)]);
    let three_g = Shape::Mig {
        profile: MigProfile::ThreeG,
        models: ModelSet::ANY,
        cpu_milli: 0,
        memory_mib: 0,
    };
    assert_eq!(fleet.available(&three_g), 32, "no MIG capacity was lost");
}

#[test]
fn a_whole_gpu_takes_a_plain_gpu_before_an_idle_shared_one() {
    let mut fleet = Fleet::new(vec![
        node("shared", "k", "shared", "H100", 2, GpuMode::Shared),
        node("plain", "k", "plain", "H100", 2, GpuMode::Whole),
    ])
    .unwrap();
    let p = commit(
        &mut fleet,
        1,
        &Request::new(TenantKey(1), gpus(2, Topology::ANY)),
    );
    assert_eq!(p.nodes[0].node, NodeId(1));
    // With every plain GPU taken, a shared GPU is sold whole.
    let p = commit(&mut fleet, 2, &Request::new(TenantKey(1), one_gpu()));
    assert_eq!(p.nodes[0].node, NodeId(0));
    // A gang spread over nodes also takes the plain GPUs first.
    let mut fleet = Fleet::new(vec![
        node("shared", "k", "shared", "H100", 2, GpuMode::Shared),
        node("plain-a", "k", "plain-a", "H100", 2, GpuMode::Whole),
        node("plain-b", "k", "plain-b", "H100", 2, GpuMode::Whole),
    ])
    .unwrap();
    let p = commit(
        &mut fleet,
        1,
        &Request::new(TenantKey(1), gpus(4, Topology::ANY)),
    );
    assert!(p.nodes.iter().all(|np| np.node != NodeId(0)), "{p:?}");
}

#[test]
fn the_most_ever_placeable_follows_the_required_topology() {
    let fleet = hgx_fleet(2, 2);
    let level = |l| gpus(16, Topology::required(l));
    assert_eq!(fleet.most_ever(&level(TopologyLevel::Node)), 8);
    assert_eq!(fleet.most_ever(&level(TopologyLevel::NvlinkDomain)), 8);
    assert_eq!(fleet.most_ever(&level(TopologyLevel::Rack)), 16);
    assert_eq!(fleet.most_ever(&gpus(16, Topology::ANY)), 32);
    assert_eq!(fleet.most_ever(&whole_nodes(2)), 4);
    let mig = Fleet::new(vec![node("m", "k", "m", "H100", 2, GpuMode::Mig)]).unwrap();
    let seven_g = Shape::Mig {
        profile: MigProfile::SevenG,
        models: ModelSet::ANY,
        cpu_milli: 0,
        memory_mib: 0,
    };
    assert_eq!(mig.most_ever(&seven_g), 2);
    assert_eq!(mig.most_ever(&one_gpu()), 0);
}

/// One rack of 8-GPU H100 nodes, each its own NVLink domain (or all in one domain),
/// with the reliabilities given.
fn rated(reliability: &[Option<u16>], one_domain: bool) -> Fleet {
    let specs = reliability
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            let name = format!("n{i}");
            let domain = if one_domain { "nvl" } else { name.as_str() };
            crate::fleet::NodeSpec {
                reliability: r,
                ..node(&name, "rack", domain, "H100", 8, GpuMode::Whole)
            }
        })
        .collect();
    Fleet::new(specs).unwrap()
}

fn placed_on(fleet: &Fleet, req: &Request, policy: PolicyKind) -> Vec<NodeId> {
    let p = fleet.place_with(req, &mut Policy::new(policy, 0)).unwrap();
    p.nodes.iter().map(|np| np.node).collect()
}

#[test]
fn an_on_demand_tie_goes_to_the_more_reliable_node() {
    let req = Request::new(TenantKey(1), one_gpu());
    for policy in [PolicyKind::Topo, PolicyKind::BestFit, PolicyKind::Fgd] {
        // Without records the first node met wins the tie.
        let unrated = rated(&[None, None, None], false);
        assert_eq!(placed_on(&unrated, &req, policy), [NodeId(0)], "{policy}");
        let fleet = rated(&[Some(9_000), Some(9_990), Some(9_500)], false);
        assert_eq!(placed_on(&fleet, &req, policy), [NodeId(1)], "{policy}");
    }
}

#[test]
fn a_node_without_a_record_ranks_below_any_reliability() {
    let req = Request::new(TenantKey(1), one_gpu());
    for policy in [PolicyKind::Topo, PolicyKind::BestFit] {
        let fleet = rated(&[None, Some(0)], false);
        assert_eq!(placed_on(&fleet, &req, policy), [NodeId(1)], "{policy}");
        let fleet = rated(&[Some(0), None], false);
        assert_eq!(placed_on(&fleet, &req, policy), [NodeId(0)], "{policy}");
    }
}

#[test]
fn spot_and_reserved_placements_ignore_reliability() {
    let unrated = rated(&[None, None, None], false);
    let mut fleet = rated(&[Some(9_000), Some(9_990), Some(9_500)], false);
    for class in [Class::Spot, Class::Reserved] {
        let req = Request::new(TenantKey(1), one_gpu()).with_class(class);
        for policy in [PolicyKind::Topo, PolicyKind::BestFit] {
            let p = |f: &Fleet| f.place_with(&req, &mut Policy::new(policy, 0)).unwrap();
            assert_eq!(p(&fleet), p(&unrated), "{class:?} {policy}");
            assert_eq!(p(&fleet).nodes[0].node, NodeId(0), "{class:?} {policy}");
        }
    }
    // A live fleet's records change the next on-demand answer.
    let req = Request::new(TenantKey(1), one_gpu());
    fleet.set_node_reliability(NodeId(2), Some(10_000)).unwrap();
    assert_eq!(placed_on(&fleet, &req, PolicyKind::Topo), [NodeId(2)]);
    assert_eq!(fleet.node_reliability(NodeId(2)), Some(10_000));
    assert!(fleet.set_node_reliability(NodeId(3), None).is_err());
}

#[test]
fn a_better_packing_beats_a_more_reliable_node() {
    // n1 already holds a GPU: packing beside it is strictly better than opening n0.
    let mut fleet = rated(&[Some(10_000), Some(9_000)], false);
    fleet
        .set_node_state(NodeId(0), NodeState::Draining)
        .unwrap();
    commit(&mut fleet, 1, &Request::new(TenantKey(2), one_gpu()));
    fleet.set_node_state(NodeId(0), NodeState::Active).unwrap();
    let req = Request::new(TenantKey(1), one_gpu());
    for policy in [PolicyKind::Topo, PolicyKind::BestFit] {
        assert_eq!(placed_on(&fleet, &req, policy), [NodeId(1)], "{policy}");
    }
}

#[test]
fn a_gang_takes_the_more_reliable_of_equal_nodes_but_never_a_smaller_block() {
    let req = Request::new(
        TenantKey(1),
        gpus(16, Topology::required(TopologyLevel::Rack)),
    );
    for one_domain in [false, true] {
        let unrated = rated(&[None, None, None], one_domain);
        assert_eq!(
            placed_on(&unrated, &req, PolicyKind::Topo),
            [NodeId(0), NodeId(1)]
        );
        let fleet = rated(&[Some(9_000), Some(9_990), Some(9_500)], one_domain);
        let mut on = placed_on(&fleet, &req, PolicyKind::Topo);
        on.sort_unstable();
        assert_eq!(on, [NodeId(1), NodeId(2)], "one domain: {one_domain}");
        let spot = req.with_class(Class::Spot);
        assert_eq!(
            placed_on(&fleet, &spot, PolicyKind::Topo),
            [NodeId(0), NodeId(1)]
        );
    }
    // n1, the most reliable, has 7 GPUs left: two whole nodes hold the gang instead.
    let mut fleet = rated(&[Some(9_000), Some(9_990), Some(9_500)], false);
    fleet
        .set_node_state(NodeId(0), NodeState::Draining)
        .unwrap();
    fleet
        .set_node_state(NodeId(2), NodeState::Draining)
        .unwrap();
    commit(&mut fleet, 1, &Request::new(TenantKey(2), one_gpu()));
    fleet.set_node_state(NodeId(0), NodeState::Active).unwrap();
    fleet.set_node_state(NodeId(2), NodeState::Active).unwrap();
    let mut on = placed_on(&fleet, &req, PolicyKind::Topo);
    on.sort_unstable();
    assert_eq!(on, [NodeId(0), NodeId(2)]);
}

#[test]
fn a_node_spec_without_reliability_loads_without_a_record() {
    let mut json = serde_json::to_value(node("n", "k", "n", "H100", 1, GpuMode::Whole)).unwrap();
    json.as_object_mut().unwrap().remove("reliability");
    let spec: crate::fleet::NodeSpec = serde_json::from_value(json).unwrap();
    assert_eq!(spec.reliability, None);
}

#[test]
fn a_topo_tie_within_a_cost_step_keeps_the_packing_order() {
    // Opening n0 costs 0.3 × (128 + 80), n1 0.3 × (130 + 80): one 20-milli step, so the
    // first met wins; reliability breaks only exact ties.
    let mut specs: Vec<_> = (0..2)
        .map(|i| {
            node(
                &format!("n{i}"),
                "rack",
                &format!("n{i}"),
                "H100",
                8,
                GpuMode::Whole,
            )
        })
        .collect();
    specs[0].reliability = Some(9_000);
    specs[1].reliability = Some(9_990);
    specs[1].cpu_milli = 130_000;
    let fleet = Fleet::new(specs).unwrap();
    let req = Request::new(TenantKey(1), one_gpu());
    assert_eq!(placed_on(&fleet, &req, PolicyKind::Topo), [NodeId(0)]);
}
