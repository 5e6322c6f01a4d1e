package main

// What a site can be read from, as a stretched cluster holds it: DRS host and VM groups, VM/Host
// rules, each host's vSAN fault domain, and a witness host outside the cluster.
//
// vcsim 0.24.2 keeps groups and VM/Host rules a client sends with ReconfigureComputeResource_Task
// (groupSpec, rulesSpec: simulator/cluster_compute_resource.go, updateGroups and updateRules,
// matching by name and validating nothing), so the harness sends them as a user would. It has no
// vSAN: every host carries the esx template's vsanHostConfig (enabled false, an empty
// faultDomainInfo) and nothing changes it, so the harness sets `config.vsanHostConfig` on the
// host object itself, as vSAN would after the host joined a fault domain. Its property collector
// answers a path through an unset property, or ending in an empty string, with the path and no
// value (simulator/property_collector.go, fieldValue): vCenter leaves an unset value out too,
// but sends an empty string as one, so the default fault domain ("") reads differently here.

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// hostGroup is a DRS host group, its hosts by name.
type hostGroup struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts"`
}

// vmGroup is a DRS VM group, its VMs by name.
type vmGroup struct {
	Name string   `json:"name"`
	Vms  []string `json:"vms"`
}

// vmHostRule ties a VM group to a host group (affine) or keeps it off one (anti-affine).
type vmHostRule struct {
	Name                string `json:"name"`
	Enabled             bool   `json:"enabled"`
	Mandatory           bool   `json:"mandatory"`
	VMGroup             string `json:"vmGroup"`
	AffineHostGroup     string `json:"affineHostGroup"`
	AntiAffineHostGroup string `json:"antiAffineHostGroup"`
}

// standaloneHost is a host outside every cluster, in its own compute resource, as a vSAN
// stretched cluster's witness is; harness-only, since observation leaves such hosts out.
type standaloneHost struct {
	Name            string  `json:"name"`
	Datacenter      string  `json:"datacenter"`
	VsanFaultDomain *string `json:"vsanFaultDomain"`
}

// groupSpecs are the cluster's host and VM groups as a reconfiguration adds them.
func groupSpecs(cl cluster, vms map[string]*object.VirtualMachine, hosts map[string]*object.HostSystem) ([]types.ClusterGroupSpec, error) {
	var specs []types.ClusterGroupSpec
	add := func(info types.BaseClusterGroupInfo) {
		specs = append(specs, types.ClusterGroupSpec{
			ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
			Info:            info,
		})
	}
	for _, g := range cl.HostGroups {
		group := &types.ClusterHostGroup{ClusterGroupInfo: types.ClusterGroupInfo{Name: g.Name, UserCreated: types.NewBool(true)}}
		for _, name := range g.Hosts {
			if !clusterHasHost(cl, name) {
				return nil, fmt.Errorf("host group %s: %s is not a host of the cluster", g.Name, name)
			}
			group.Host = append(group.Host, hosts[name].Reference())
		}
		add(group)
	}
	for _, g := range cl.VMGroups {
		group := &types.ClusterVmGroup{ClusterGroupInfo: types.ClusterGroupInfo{Name: g.Name, UserCreated: types.NewBool(true)}}
		for _, name := range g.Vms {
			machine, ok := vms[cl.Datacenter+"/"+name]
			if !ok {
				return nil, fmt.Errorf("vm group %s: unknown vm %s", g.Name, name)
			}
			group.Vm = append(group.Vm, machine.Reference())
		}
		add(group)
	}
	return specs, nil
}

// vmHostRuleSpecs are the cluster's VM/Host rules as a reconfiguration adds them.
func vmHostRuleSpecs(cl cluster) []types.ClusterRuleSpec {
	var specs []types.ClusterRuleSpec
	for _, r := range cl.VMHostRules {
		info := &types.ClusterVmHostRuleInfo{
			ClusterRuleInfo: types.ClusterRuleInfo{
				Name:        r.Name,
				Enabled:     types.NewBool(r.Enabled),
				Mandatory:   types.NewBool(r.Mandatory),
				UserCreated: types.NewBool(true),
			},
			VmGroupName:             r.VMGroup,
			AffineHostGroupName:     r.AffineHostGroup,
			AntiAffineHostGroupName: r.AntiAffineHostGroup,
		}
		specs = append(specs, types.ClusterRuleSpec{
			ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
			Info:            info,
		})
	}
	return specs
}

// isVMHostRule tells whether a rule of the inventory's `rules` is one of its `vmHostRules`
// (the inventory lists VM/Host rules in both): it is then built from the latter, with its
// groups, and only once.
func isVMHostRule(cl cluster, name string) bool {
	for _, r := range cl.VMHostRules {
		if r.Name == name {
			return true
		}
	}
	return false
}

// setVsanFaultDomain turns vSAN on for a host in the named fault domain ("" is vSAN's default
// domain); a host without one keeps vcsim's vSAN-off configuration.
func setVsanFaultDomain(h *object.HostSystem, faultDomain *string) {
	if faultDomain == nil {
		return
	}
	obj := simulator.Map.Get(h.Reference()).(*simulator.HostSystem)
	simulator.Map.WithLock(obj, func() {
		self := obj.Reference()
		obj.Config.VsanHostConfig = &types.VsanHostConfigInfo{
			Enabled:         types.NewBool(true),
			HostSystem:      &self,
			ClusterInfo:     &types.VsanHostConfigInfoClusterInfo{},
			FaultDomainInfo: &types.VsanHostFaultDomainInfo{Name: *faultDomain},
		}
	})
}

// addStandaloneHosts adds each host outside the clusters, in its own compute resource under its
// datacenter's host folder, created when no cluster made it.
func addStandaloneHosts(ctx context.Context, c *govmomi.Client, standalone []standaloneHost, datacenters map[string]*object.Datacenter) error {
	root := object.NewRootFolder(c.Client)
	for _, h := range standalone {
		dc, ok := datacenters[h.Datacenter]
		if !ok {
			var err error
			if dc, err = root.CreateDatacenter(ctx, h.Datacenter); err != nil {
				return fmt.Errorf("datacenter %s: %w", h.Datacenter, err)
			}
			datacenters[h.Datacenter] = dc
		}
		folders, err := dc.Folders(ctx)
		if err != nil {
			return err
		}
		task, err := folders.HostFolder.AddStandaloneHost(ctx, types.HostConnectSpec{HostName: h.Name}, true, nil, nil)
		if err != nil {
			return fmt.Errorf("standalone host %s: %w", h.Name, err)
		}
		info, err := task.WaitForResult(ctx, nil)
		if err != nil {
			return fmt.Errorf("standalone host %s: %w", h.Name, err)
		}
		setVsanFaultDomain(object.NewHostSystem(c.Client, info.Result.(types.ManagedObjectReference)), h.VsanFaultDomain)
	}
	return nil
}
