// Command vcsim is the vCenter simulator the integration tests talk to.
//
// It runs govmomi's simulator (Debian's golang-github-vmware-govmomi-dev, 0.24.2) on 127.0.0.1
// and builds in it the inventory given as JSON: the camelCase form of the crate's `Inventory`
// (clusters with their datacenter, DRS and HA configuration, hosts with their vSAN fault domain,
// VMs pinned to hosts with fixed BIOS uuids, rules, DRS host and VM groups, VM/Host rules), plus
// harness-only `templates` and `standaloneHosts` (sites.go). It serves https with a leaf certificate
// signed by a CA it generates, because rustls refuses the simulator's built-in CA:TRUE
// certificate.
//
// Logins are checked against a table of users: at first only -username/-password, which holds
// the Admin role on the root folder, as vCenter's administrator does. Tests add users, roles and
// permissions, which the harness enforces where vcsim does not (authorization.go says where).
//
// A second, plain-http listener is the control endpoint for tests:
//
//	POST /move?vm=NAME&host=NAME   relocate a VM with RelocateVM_Task (what a DRS vMotion does;
//	                               vcsim 0.24.2 has no MigrateVM_Task)
//	GET  /stats                    SOAP calls served so far, by method ({"Login": 1, ...})
//	POST /sessions/terminate       end every client session, as an idle timeout would
//	POST /users                    {"name", "password"}: a user Login accepts
//	POST /roles                    {"name", "privileges"}: a role (AddAuthorizationRole, as
//	                               `govc role.create`); vCenter adds the System privileges
//	POST /permissions              {"principal", "role", "path", "propagate"}: the role for the
//	                               user on the object at that inventory path ("/" is the root
//	                               folder), as `govc permissions.set`
//	POST /pages/fail-next          the next ContinueRetrievePropertiesEx fails as for an expired
//	                               token (with -page-size)
//
// With -page-size N, property retrievals are paged by N objects behind a token and continued
// with ContinueRetrievePropertiesEx, as real vCenter does (vcsim 0.24.2 never pages and lacks
// that method).
//
// When ready it prints one JSON line on stdout: {"url": SOAP URL, "control": control URL}.
// It stops when stdin closes or on SIGTERM/SIGINT.
//
// Build: GOPATH=/usr/share/gocode GO111MODULE=off go build -o target/vcsim/vcsim ./tests/support/vcsim
// (scripts/build-vcsim.sh does this).
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"html"
	"io"
	"io/ioutil"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// harnessAgent marks the harness's own SOAP calls so they are neither counted nor terminated.
const harnessAgent = "vsphere-descheduler-vcsim-harness"

type inventory struct {
	Clusters        []cluster        `json:"clusters"`
	Templates       []template       `json:"templates"`
	StandaloneHosts []standaloneHost `json:"standaloneHosts"`
}

type cluster struct {
	Name       string `json:"name"`
	Datacenter string `json:"datacenter"`
	Drs        *drs   `json:"drs"`
	Ha         *ha    `json:"ha"`
	Hosts      []host `json:"hosts"`
	Vms        []vm   `json:"vms"`
	Rules      []rule `json:"rules"`
	// VM/Host rules appear in Rules too (kind other); they are built from here, with groups.
	HostGroups  []hostGroup  `json:"hostGroups"`
	VMGroups    []vmGroup    `json:"vmGroups"`
	VMHostRules []vmHostRule `json:"vmHostRules"`
}

type drs struct {
	Enabled           bool   `json:"enabled"`
	DefaultVMBehavior string `json:"defaultVmBehavior"`
}

// ha is the inventory's HA configuration; without it a cluster keeps vcsim's empty dasConfig.
type ha struct {
	Enabled                    bool              `json:"enabled"`
	AdmissionControl           *admissionControl `json:"admissionControl"`
	RestartPriority            string            `json:"restartPriority"`
	RespectVMAntiAffinityRules *bool             `json:"respectVmAntiAffinityRules"`
}

// admissionControl is one policy, named by `policy`: hostFailures (failoverLevel),
// resourcePercentage (cpuPercent, memoryPercent, optional failoverLevel) or dedicatedHosts
// (hosts, by name).
type admissionControl struct {
	Policy        string   `json:"policy"`
	FailoverLevel *int32   `json:"failoverLevel"`
	CPUPercent    int32    `json:"cpuPercent"`
	MemoryPercent int32    `json:"memoryPercent"`
	Hosts         []string `json:"hosts"`
}

type host struct {
	Name              string `json:"name"`
	ConnectionState   string `json:"connectionState"`
	InMaintenanceMode bool   `json:"inMaintenanceMode"`
	// VsanFaultDomain turns vSAN on for the host, in this fault domain; without it vSAN is off.
	VsanFaultDomain *string `json:"vsanFaultDomain"`
}

type vm struct {
	Name        string  `json:"name"`
	UUID        string  `json:"uuid"`
	Host        string  `json:"host"`
	PowerState  string  `json:"powerState"`
	DrsBehavior *string `json:"drsBehavior"`
}

type rule struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Enabled     bool     `json:"enabled"`
	Mandatory   bool     `json:"mandatory"`
	UserCreated *bool    `json:"userCreated"`
	Vms         []string `json:"vms"`
}

// template is a VM template, which observation must leave out.
type template struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster"`
	Host    string `json:"host"`
}

func main() {
	inventoryPath := flag.String("inventory", "", "JSON inventory to build (required)")
	username := flag.String("username", "user", "the only accepted user name")
	password := flag.String("password", "pass", "the only accepted password")
	caOut := flag.String("ca-out", "", "write the PEM of the CA that signed the server certificate here (required)")
	pageSize := flag.Int("page-size", 0, "page RetrievePropertiesEx results by this many objects, as vCenter does (0: never)")
	flag.Parse()
	if *inventoryPath == "" || *caOut == "" {
		log.Fatal("-inventory and -ca-out are required")
	}

	raw, err := ioutil.ReadFile(*inventoryPath)
	check(err, "read inventory")
	var inv inventory
	check(json.Unmarshal(raw, &inv), "parse inventory")

	leaf, err := writeCertificates(*caOut)
	check(err, "generate certificates")

	model := simulator.VPX()
	model.Datacenter = 0
	model.Cluster = 0
	model.ClusterHost = 0
	model.Host = 0
	model.Machine = 0
	model.Pool = 0
	model.Datastore = 0
	model.Portgroup = 0
	check(model.Create(), "create model")
	defer model.Remove()

	model.Service.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	// No user here: vcsim then accepts any non-empty pair, and the counter enforces the table.
	model.Service.Listen = &url.URL{Host: "127.0.0.1:0"}
	server := model.Service.NewServer()
	defer server.Close()

	accounts := newAccounts()
	accounts.add(*username, *password)
	counter := newCounter(accounts)
	if *pageSize > 0 {
		counter.pager = &pager{size: *pageSize, pages: map[string][]string{}}
	}
	// Wrapping before the URL is printed means no client request can be served unwrapped.
	server.Server.Config.Handler = counter.wrap(server.Server.Config.Handler)

	soapURL := *server.URL
	soapURL.User = nil
	admin := &url.URL{Scheme: soapURL.Scheme, Host: soapURL.Host, Path: soapURL.Path, User: url.UserPassword(*username, *password)}

	ctx := context.Background()
	tmp, err := ioutil.TempDir("", "vcsim-datastore-")
	check(err, "create datastore directory")
	defer os.RemoveAll(tmp)

	client, err := connect(ctx, admin)
	check(err, "log in to the simulator")
	counter.authorization = installAuthorization(*client.ServiceContent.AuthorizationManager, accounts)
	check(grantAdmin(ctx, client, *username), "grant the administrator")
	check(build(ctx, client, &inv, tmp), "build inventory")
	_ = client.Logout(ctx)

	control, err := net.Listen("tcp", "127.0.0.1:0")
	check(err, "listen for control")
	harness := &harness{admin: admin, counter: counter, accounts: accounts}
	go func() { _ = http.Serve(control, harness.routes()) }()

	ready, err := json.Marshal(map[string]string{
		"url":     soapURL.String(),
		"control": "http://" + control.Addr().String(),
	})
	check(err, "encode readiness")
	fmt.Println(string(ready))

	// Stop when the test process goes away (stdin closes) or on a signal.
	stop := make(chan struct{}, 1)
	go func() {
		_, _ = io.Copy(ioutil.Discard, os.Stdin)
		stop <- struct{}{}
	}()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
	case <-signals:
	}
}

func check(err error, what string) {
	if err != nil {
		log.Fatalf("%s: %v", what, err)
	}
}

// connect logs in as the harness, marked by its user agent from the first request on.
func connect(ctx context.Context, u *url.URL) (*govmomi.Client, error) {
	soapClient := soap.NewClient(u, true)
	soapClient.UserAgent = harnessAgent
	vimClient, err := vim25.NewClient(ctx, soapClient)
	if err != nil {
		return nil, err
	}
	client := &govmomi.Client{Client: vimClient, SessionManager: session.NewManager(vimClient)}
	if err := client.Login(ctx, u.User); err != nil {
		return nil, err
	}
	return client, nil
}

// writeCertificates makes a CA and a leaf for 127.0.0.1/localhost signed by it, writes the CA
// certificate as PEM to caPath, and returns the leaf for the server.
func writeCertificates(caPath string) (tls.Certificate, error) {
	notBefore := time.Now().Add(-time.Hour)
	notAfter := notBefore.Add(48 * time.Hour)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vcsim test CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, err
	}

	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	leafTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(2),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		IsCA:                  false,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTemplate, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := ioutil.WriteFile(caPath, caPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey, Leaf: nil}, nil
}

func build(ctx context.Context, c *govmomi.Client, inv *inventory, datastoreDir string) error {
	root := object.NewRootFolder(c.Client)
	datacenters := map[string]*object.Datacenter{}
	clusters := map[string]*object.ClusterComputeResource{}
	hosts := map[string]*object.HostSystem{}
	vms := map[string]*object.VirtualMachine{}

	for _, cl := range inv.Clusters {
		dc, ok := datacenters[cl.Datacenter]
		if !ok {
			var err error
			if dc, err = root.CreateDatacenter(ctx, cl.Datacenter); err != nil {
				return fmt.Errorf("datacenter %s: %w", cl.Datacenter, err)
			}
			datacenters[cl.Datacenter] = dc
		}
		folders, err := dc.Folders(ctx)
		if err != nil {
			return err
		}
		cluster, err := folders.HostFolder.CreateCluster(ctx, cl.Name, types.ClusterConfigSpecEx{})
		if err != nil {
			return fmt.Errorf("cluster %s: %w", cl.Name, err)
		}
		// Names repeat across datacenters (clusters) and folders (VMs): key both by datacenter.
		clusters[cl.Datacenter+"/"+cl.Name] = cluster

		for _, h := range cl.Hosts {
			task, err := cluster.AddHost(ctx, types.HostConnectSpec{HostName: h.Name}, true, nil, nil)
			if err != nil {
				return fmt.Errorf("host %s: %w", h.Name, err)
			}
			info, err := task.WaitForResult(ctx, nil)
			if err != nil {
				return fmt.Errorf("host %s: %w", h.Name, err)
			}
			hs := object.NewHostSystem(c.Client, info.Result.(types.ManagedObjectReference))
			dss, err := hs.ConfigManager().DatastoreSystem(ctx)
			if err != nil {
				return err
			}
			// One directory under the same datastore name on every host: a shared datastore.
			if _, err := dss.CreateLocalDatastore(ctx, "LocalDS_0", datastoreDir); err != nil {
				return fmt.Errorf("datastore on %s: %w", h.Name, err)
			}
			hosts[h.Name] = hs
		}

		pool, err := cluster.ResourcePool(ctx)
		if err != nil {
			return err
		}
		for _, v := range cl.Vms {
			ref, err := createVM(ctx, folders.VmFolder, pool, hosts[v.Host], v.Name, v.UUID)
			if err != nil {
				return fmt.Errorf("vm %s: %w", v.Name, err)
			}
			machine := object.NewVirtualMachine(c.Client, ref)
			if err := setPowerState(ctx, machine, v.PowerState); err != nil {
				return fmt.Errorf("power state of vm %s: %w", v.Name, err)
			}
			vms[cl.Datacenter+"/"+v.Name] = machine
		}
	}

	for _, t := range inv.Templates {
		dc := datacenters[clusterDatacenter(inv, t.Cluster)]
		if dc == nil {
			return fmt.Errorf("template %s: unknown cluster %s", t.Name, t.Cluster)
		}
		folders, err := dc.Folders(ctx)
		if err != nil {
			return err
		}
		pool, err := clusters[clusterDatacenter(inv, t.Cluster)+"/"+t.Cluster].ResourcePool(ctx)
		if err != nil {
			return err
		}
		ref, err := createVM(ctx, folders.VmFolder, pool, hosts[t.Host], t.Name, "")
		if err != nil {
			return fmt.Errorf("template %s: %w", t.Name, err)
		}
		if err := object.NewVirtualMachine(c.Client, ref).MarkAsTemplate(ctx); err != nil {
			return fmt.Errorf("template %s: %w", t.Name, err)
		}
	}

	for _, cl := range inv.Clusters {
		if err := configureCluster(ctx, clusters[cl.Datacenter+"/"+cl.Name], cl, vms, hosts); err != nil {
			return fmt.Errorf("cluster %s: %w", cl.Name, err)
		}
		for _, h := range cl.Hosts {
			setHostState(hosts[h.Name], h)
			setVsanFaultDomain(hosts[h.Name], h.VsanFaultDomain)
		}
	}
	return addStandaloneHosts(ctx, c, inv.StandaloneHosts, datacenters)
}

func clusterDatacenter(inv *inventory, name string) string {
	for _, cl := range inv.Clusters {
		if cl.Name == name {
			return cl.Datacenter
		}
	}
	return ""
}

func createVM(ctx context.Context, folder *object.Folder, pool *object.ResourcePool, host *object.HostSystem, name, uuid string) (types.ManagedObjectReference, error) {
	if host == nil {
		return types.ManagedObjectReference{}, fmt.Errorf("unknown host")
	}
	// Without an explicit host vcsim places a cluster VM on a random host, so always pin it.
	spec := types.VirtualMachineConfigSpec{
		Name:     name,
		Uuid:     uuid,
		GuestId:  string(types.VirtualMachineGuestOsIdentifierOtherLinux64Guest),
		NumCPUs:  2,
		MemoryMB: 2048,
		Files:    &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"},
	}
	task, err := folder.CreateVM(ctx, spec, pool, host)
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	return info.Result.(types.ManagedObjectReference), nil
}

func setPowerState(ctx context.Context, machine *object.VirtualMachine, state string) error {
	if state == "poweredOff" {
		return nil
	}
	task, err := machine.PowerOn(ctx)
	if err != nil {
		return err
	}
	if err := task.Wait(ctx); err != nil {
		return err
	}
	if state == "suspended" {
		task, err := machine.Suspend(ctx)
		if err != nil {
			return err
		}
		return task.Wait(ctx)
	}
	return nil
}

// configureCluster applies the rules, DRS groups and DRS overrides through
// ReconfigureComputeResource_Task, as a user would, and the DRS and HA configurations directly, because vcsim ignores drsConfig
// and dasConfig edits.
func configureCluster(ctx context.Context, cluster *object.ClusterComputeResource, cl cluster, vms map[string]*object.VirtualMachine, hosts map[string]*object.HostSystem) error {
	groups, err := groupSpecs(cl, vms, hosts)
	if err != nil {
		return err
	}
	spec := &types.ClusterConfigSpecEx{GroupSpec: groups, RulesSpec: vmHostRuleSpecs(cl)}
	for _, r := range cl.Rules {
		if isVMHostRule(cl, r.Name) {
			continue
		}
		var refs []types.ManagedObjectReference
		for _, name := range r.Vms {
			machine, ok := vms[cl.Datacenter+"/"+name]
			if !ok {
				return fmt.Errorf("rule %s: unknown vm %s", r.Name, name)
			}
			refs = append(refs, machine.Reference())
		}
		userCreated := true
		if r.UserCreated != nil {
			userCreated = *r.UserCreated
		}
		base := types.ClusterRuleInfo{
			Name:        r.Name,
			Enabled:     types.NewBool(r.Enabled),
			Mandatory:   types.NewBool(r.Mandatory),
			UserCreated: types.NewBool(userCreated),
		}
		var info types.BaseClusterRuleInfo
		switch r.Type {
		case "antiAffinity":
			info = &types.ClusterAntiAffinityRuleSpec{ClusterRuleInfo: base, Vm: refs}
		case "affinity":
			info = &types.ClusterAffinityRuleSpec{ClusterRuleInfo: base, Vm: refs}
		default:
			// Any other kind stands for the rules the tool must leave alone and reads no more
			// of than `rules` holds: a VM-VM dependency rule. VM/Host rules are built from
			// vmHostRules (sites.go) with their groups, since observation reads those.
			info = &types.ClusterDependencyRuleInfo{ClusterRuleInfo: base, VmGroup: "vms", DependsOnVmGroup: "others"}
		}
		spec.RulesSpec = append(spec.RulesSpec, types.ClusterRuleSpec{
			ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
			Info:            info,
		})
	}
	for _, v := range cl.Vms {
		if v.DrsBehavior == nil {
			continue
		}
		info := &types.ClusterDrsVmConfigInfo{Key: vms[cl.Datacenter+"/"+v.Name].Reference()}
		if *v.DrsBehavior == "disabled" {
			info.Enabled = types.NewBool(false)
		} else {
			info.Enabled = types.NewBool(true)
			info.Behavior = types.DrsBehavior(*v.DrsBehavior)
		}
		spec.DrsVmConfigSpec = append(spec.DrsVmConfigSpec, types.ClusterDrsVmConfigSpec{
			ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
			Info:            info,
		})
	}
	task, err := cluster.Reconfigure(ctx, spec, true)
	if err != nil {
		return err
	}
	if err := task.Wait(ctx); err != nil {
		return err
	}

	var das *types.ClusterDasConfigInfo
	if cl.Ha != nil {
		if das, err = dasConfig(cl, hosts); err != nil {
			return err
		}
	}
	obj := simulator.Map.Get(cluster.Reference()).(*simulator.ClusterComputeResource)
	simulator.Map.WithLock(obj, func() {
		cfg := obj.ConfigurationEx.(*types.ClusterConfigInfoEx)
		if cl.Drs != nil {
			cfg.DrsConfig.Enabled = types.NewBool(cl.Drs.Enabled)
			cfg.DrsConfig.DefaultVmBehavior = types.DrsBehavior(cl.Drs.DefaultVMBehavior)
		}
		if das != nil {
			cfg.DasConfig = *das
		}
	})
	return nil
}

// dasConfig is the cluster's HA configuration as vCenter would hold it after a user set it:
// admission control off when the inventory has none, the anti-affinity option only when set.
func dasConfig(cl cluster, hosts map[string]*object.HostSystem) (*types.ClusterDasConfigInfo, error) {
	spec := cl.Ha
	das := &types.ClusterDasConfigInfo{
		Enabled:                 types.NewBool(spec.Enabled),
		AdmissionControlEnabled: types.NewBool(spec.AdmissionControl != nil),
		DefaultVmSettings:       &types.ClusterDasVmSettings{RestartPriority: spec.RestartPriority},
	}
	if ac := spec.AdmissionControl; ac != nil {
		switch ac.Policy {
		case "hostFailures":
			if ac.FailoverLevel == nil {
				return nil, fmt.Errorf("HA policy hostFailures needs a failoverLevel")
			}
			das.AdmissionControlPolicy = &types.ClusterFailoverLevelAdmissionControlPolicy{FailoverLevel: *ac.FailoverLevel}
		case "resourcePercentage":
			policy := &types.ClusterFailoverResourcesAdmissionControlPolicy{
				CpuFailoverResourcesPercent:    ac.CPUPercent,
				MemoryFailoverResourcesPercent: ac.MemoryPercent,
			}
			if ac.FailoverLevel != nil {
				policy.FailoverLevel = *ac.FailoverLevel
			}
			das.AdmissionControlPolicy = policy
		case "dedicatedHosts":
			policy := &types.ClusterFailoverHostAdmissionControlPolicy{}
			for _, name := range ac.Hosts {
				if !clusterHasHost(cl, name) {
					return nil, fmt.Errorf("HA failover host %s is not a host of the cluster", name)
				}
				policy.FailoverHosts = append(policy.FailoverHosts, hosts[name].Reference())
			}
			das.AdmissionControlPolicy = policy
		default:
			return nil, fmt.Errorf("unknown HA admission control policy %q", ac.Policy)
		}
	}
	if spec.RespectVMAntiAffinityRules != nil {
		das.Option = []types.BaseOptionValue{&types.OptionValue{
			Key:   "das.respectVmVmAntiAffinityRules",
			Value: fmt.Sprint(*spec.RespectVMAntiAffinityRules),
		}}
	}
	return das, nil
}

func clusterHasHost(cl cluster, name string) bool {
	for _, h := range cl.Hosts {
		if h.Name == name {
			return true
		}
	}
	return false
}

func setHostState(h *object.HostSystem, spec host) {
	obj := simulator.Map.Get(h.Reference())
	state := types.HostSystemConnectionStateConnected
	if spec.ConnectionState != "" {
		state = types.HostSystemConnectionState(spec.ConnectionState)
	}
	simulator.Map.Update(obj, []types.PropertyChange{
		{Name: "runtime.connectionState", Val: state},
		{Name: "runtime.inMaintenanceMode", Val: spec.InMaintenanceMode},
	})
}

// counter counts the SOAP methods clients call and remembers their session cookies. It enforces
// the user table on Login, the write privilege on cluster reconfiguration and the read privilege
// on what property retrievals return (authorization.go). With a pager it also pages property
// retrievals, which vcsim 0.24.2 never does.
type counter struct {
	mu            sync.Mutex
	calls         map[string]int
	sessions      map[string]struct{}
	pager         *pager
	accounts      *accounts
	authorization *authorizationManager
}

func newCounter(accounts *accounts) *counter {
	return &counter{calls: map[string]int{}, sessions: map[string]struct{}{}, accounts: accounts}
}

// methodPattern finds the first element inside the SOAP Body: the method name.
var methodPattern = regexp.MustCompile(`<(?:[A-Za-z_][\w.-]*:)?Body[^>]*>\s*<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w]*)`)

func (c *counter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.UserAgent() != harnessAgent {
			body, err := ioutil.ReadAll(r.Body)
			_ = r.Body.Close()
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			r.Body = ioutil.NopCloser(bytes.NewReader(body))
			method := ""
			session := ""
			c.mu.Lock()
			if m := methodPattern.FindSubmatch(body); m != nil {
				method = string(m[1])
				c.calls[method]++
			}
			if cookie, err := r.Cookie("vmware_soap_session"); err == nil {
				session = cookie.Value
				c.sessions[session] = struct{}{}
			}
			c.mu.Unlock()
			switch method {
			case "Login":
				c.login(w, r, body, next)
				return
			case "Logout":
				c.accounts.loggedOut(session)
			case "ReconfigureComputeResource_Task":
				if c.refuseReconfigure(w, session, body) {
					return
				}
			}
			switch method {
			case "RetrievePropertiesEx":
				c.retrieve(w, r, next, session)
				return
			case "ContinueRetrievePropertiesEx", "CancelRetrievePropertiesEx":
				if c.pager != nil {
					c.pager.rest(w, method, body)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

var (
	userNamePattern = regexp.MustCompile(`<userName>([^<]*)</userName>`)
	passwordPattern = regexp.MustCompile(`<password>([^<]*)</password>`)
	keyPattern      = regexp.MustCompile(`<key>([^<]*)</key>`)
	clusterPattern  = regexp.MustCompile(`<_this type="ClusterComputeResource">([^<]*)</_this>`)
)

// login refuses a pair that is not in the table as vCenter does, and otherwise lets vcsim log
// in and remembers whose session it created.
func (c *counter) login(w http.ResponseWriter, r *http.Request, body []byte, next http.Handler) {
	text := func(pattern *regexp.Regexp) string {
		if m := pattern.FindSubmatch(body); m != nil {
			return html.UnescapeString(string(m[1]))
		}
		return ""
	}
	user := text(userNamePattern)
	if !c.accounts.valid(user, text(passwordPattern)) {
		fault(w, `<faultstring>Login failure</faultstring><detail><InvalidLoginFault xmlns="urn:vim25" xsi:type="InvalidLogin"></InvalidLoginFault></detail>`)
		return
	}
	recorder := httptest.NewRecorder()
	next.ServeHTTP(recorder, r)
	if recorder.Code == http.StatusOK {
		if m := keyPattern.FindSubmatch(recorder.Body.Bytes()); m != nil {
			c.accounts.loggedIn(string(m[1]), user)
		}
	}
	for k, v := range recorder.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(recorder.Code)
	_, _ = w.Write(recorder.Body.Bytes())
}

// refuseReconfigure answers NoPermission, as vCenter does before creating the task, when the
// session's user lacks Host.Inventory.EditCluster on the cluster. Sessions it does not know are
// left to vcsim (NotAuthenticated).
func (c *counter) refuseReconfigure(w http.ResponseWriter, session string, body []byte) bool {
	user, known := c.accounts.user(session)
	m := clusterPattern.FindSubmatch(body)
	if !known || m == nil || c.authorization == nil {
		return false
	}
	cluster := types.ManagedObjectReference{Type: "ClusterComputeResource", Value: string(m[1])}
	const privilege = "Host.Inventory.EditCluster"
	allowed := false
	simulator.Map.WithLock(c.authorization.Reference(), func() {
		allowed = c.authorization.holds(user, cluster, privilege)
	})
	if allowed {
		return false
	}
	fault(w, `<faultstring>`+permissionDenied+`</faultstring><detail><NoPermissionFault xmlns="urn:vim25" xsi:type="NoPermission"><object type="ClusterComputeResource">`+html.EscapeString(cluster.Value)+`</object><privilegeId>`+privilege+`</privilegeId></NoPermissionFault></detail>`)
	return true
}

// fault answers a SOAP fault whose faultstring and detail are inner.
func fault(w http.ResponseWriter, inner string) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = io.WriteString(w, envelopeStart+`<soapenv:Fault><faultcode>ServerFaultCode</faultcode>`+inner+`</soapenv:Fault>`+envelopeEnd)
}

// pager splits RetrievePropertiesEx results into pages of `size` objects behind a token and
// serves ContinueRetrievePropertiesEx and CancelRetrievePropertiesEx from them, the way real
// vCenter pages. Continuations are served by the harness, so they skip vcsim's session check.
type pager struct {
	size  int
	mu    sync.Mutex
	next  int
	pages map[string][]string
	// failNext makes the next continuation find its token gone.
	failNext bool
}

const envelopeStart = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>`
const envelopeEnd = `</soapenv:Body></soapenv:Envelope>`

var tokenPattern = regexp.MustCompile(`<token>([^<]*)</token>`)

// splitObjects returns the <objects> elements of a RetrieveResult, which never nest.
func splitObjects(inner string) []string {
	var objects []string
	for {
		start := strings.Index(inner, "<objects>")
		if start < 0 {
			return objects
		}
		end := strings.Index(inner[start:], "</objects>")
		if end < 0 {
			return objects
		}
		end += start + len("</objects>")
		objects = append(objects, inner[start:end])
		inner = inner[end:]
	}
}

// page takes one page off objects, storing the rest behind a new token ("" when none is left).
func (p *pager) page(objects []string) (string, string) {
	if len(objects) <= p.size {
		return strings.Join(objects, ""), ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	token := fmt.Sprintf("page-%d", p.next)
	p.pages[token] = objects[p.size:]
	return strings.Join(objects[:p.size], ""), token
}

// retrieve serves RetrievePropertiesEx without the entities the session's user cannot read
// (authorization.go), in pages behind a token when there is a pager. A result left empty is no
// result, as vCenter answers a retrieval that finds nothing.
func (c *counter) retrieve(w http.ResponseWriter, r *http.Request, next http.Handler, session string) {
	recorder := httptest.NewRecorder()
	next.ServeHTTP(recorder, r)
	response := recorder.Body.String()
	open := strings.Index(response, "<returnval>")
	end := strings.LastIndex(response, "</returnval>")
	if recorder.Code != http.StatusOK || open < 0 || end < open {
		for k, v := range recorder.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(recorder.Code)
		_, _ = w.Write(recorder.Body.Bytes())
		return
	}
	objects := c.readable(session, splitObjects(response[open+len("<returnval>"):end]))
	result := strings.Join(objects, "")
	if c.pager != nil {
		var token string
		result, token = c.pager.page(objects)
		if token != "" {
			result = "<token>" + token + "</token>" + result
		}
	}
	if result != "" {
		result = "<returnval>" + result + "</returnval>"
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, response[:open]+result+response[end+len("</returnval>"):])
}

// objectPattern reads the reference an <objects> element of a RetrieveResult starts with.
var objectPattern = regexp.MustCompile(`^<objects><obj type="([^"]+)">([^<]*)</obj>`)

// readable keeps the objects the session's user may read. Sessions it does not know are left
// to vcsim (NotAuthenticated).
func (c *counter) readable(session string, objects []string) []string {
	user, known := c.accounts.user(session)
	if !known || c.authorization == nil {
		return objects
	}
	var kept []string
	simulator.Map.WithLock(c.authorization.Reference(), func() {
		for _, object := range objects {
			m := objectPattern.FindStringSubmatch(object)
			if m == nil {
				kept = append(kept, object)
				continue
			}
			ref := types.ManagedObjectReference{Type: m[1], Value: html.UnescapeString(m[2])}
			if c.authorization.reads(user, ref) {
				kept = append(kept, object)
			}
		}
	})
	return kept
}

func (p *pager) rest(w http.ResponseWriter, method string, body []byte) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	m := tokenPattern.FindSubmatch(body)
	p.mu.Lock()
	var objects []string
	known := false
	if m != nil {
		objects, known = p.pages[string(m[1])]
		delete(p.pages, string(m[1]))
	}
	if method == "ContinueRetrievePropertiesEx" && p.failNext {
		p.failNext = false
		known = false
	}
	p.mu.Unlock()
	if !known {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, envelopeStart+`<soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>unknown token</faultstring><detail><InvalidArgumentFault xmlns="urn:vim25" xsi:type="InvalidArgument"><invalidProperty>token</invalidProperty></InvalidArgumentFault></detail></soapenv:Fault>`+envelopeEnd)
		return
	}
	if method == "CancelRetrievePropertiesEx" {
		_, _ = io.WriteString(w, envelopeStart+`<CancelRetrievePropertiesExResponse xmlns="urn:vim25"></CancelRetrievePropertiesExResponse>`+envelopeEnd)
		return
	}
	page, token := p.page(objects)
	if token != "" {
		page = "<token>" + token + "</token>" + page
	}
	_, _ = io.WriteString(w, envelopeStart+`<ContinueRetrievePropertiesExResponse xmlns="urn:vim25"><returnval>`+page+`</returnval></ContinueRetrievePropertiesExResponse>`+envelopeEnd)
}

type harness struct {
	admin    *url.URL
	counter  *counter
	accounts *accounts
}

func (h *harness) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/move", h.move)
	mux.HandleFunc("/stats", h.stats)
	mux.HandleFunc("/sessions/terminate", h.terminate)
	mux.HandleFunc("/users", h.addUser)
	mux.HandleFunc("/roles", h.addRole)
	mux.HandleFunc("/permissions", h.setPermission)
	mux.HandleFunc("/pages/fail-next", h.failNextPage)
	// Read each request whole before answering: the server closes HTTP/1.0 connections after
	// the reply, and closing with request bytes unread resets the connection under the reply.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := ioutil.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.Body = ioutil.NopCloser(bytes.NewReader(body))
		mux.ServeHTTP(w, r)
	})
}

func reply(w http.ResponseWriter, status int, value interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(value)
}

func fail(w http.ResponseWriter, err error) {
	reply(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
}

// asAdmin answers a control request with what act returns, act running in a session of the
// simulator's administrator that is logged out once it returns; a failure to log in, or act's
// error, is the answer instead.
func (h *harness) asAdmin(w http.ResponseWriter, r *http.Request, act func(context.Context, *govmomi.Client) (interface{}, error)) {
	ctx := r.Context()
	c, err := connect(ctx, h.admin)
	if err != nil {
		fail(w, err)
		return
	}
	defer func() { _ = c.Logout(context.Background()) }()
	answer, err := act(ctx, c)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, answer)
}

// move relocates a VM to a host with RelocateVM_Task, in a session of its own.
func (h *harness) move(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	vmName, hostName := r.URL.Query().Get("vm"), r.URL.Query().Get("host")
	h.asAdmin(w, r, func(ctx context.Context, c *govmomi.Client) (interface{}, error) {
		from, to, err := relocate(ctx, c, vmName, hostName)
		if err != nil {
			return nil, err
		}
		return map[string]string{"vm": vmName, "from": from, "to": to}, nil
	})
}

func relocate(ctx context.Context, c *govmomi.Client, vmName, hostName string) (string, string, error) {
	var machine, target types.ManagedObjectReference
	for _, e := range simulator.Map.All("VirtualMachine") {
		if e.Entity().Name == vmName {
			machine = e.Reference()
		}
	}
	for _, e := range simulator.Map.All("HostSystem") {
		if e.Entity().Name == hostName {
			target = e.Reference()
		}
	}
	if machine.Value == "" || target.Value == "" {
		return "", "", fmt.Errorf("unknown vm %q or host %q", vmName, hostName)
	}
	source := simulator.Map.Get(machine).(*simulator.VirtualMachine).Runtime.Host
	task, err := object.NewVirtualMachine(c.Client, machine).Relocate(ctx,
		types.VirtualMachineRelocateSpec{Host: &target}, types.VirtualMachineMovePriorityDefaultPriority)
	if err != nil {
		return "", "", err
	}
	if err := task.Wait(ctx); err != nil {
		return "", "", err
	}
	from := ""
	if source != nil {
		from = simulator.Map.Get(*source).(mo.Entity).Entity().Name
	}
	return from, hostName, nil
}

func (h *harness) stats(w http.ResponseWriter, r *http.Request) {
	h.counter.mu.Lock()
	calls := make(map[string]int, len(h.counter.calls))
	for k, v := range h.counter.calls {
		calls[k] = v
	}
	h.counter.mu.Unlock()
	reply(w, http.StatusOK, calls)
}

// terminate ends every session a client has used, with SessionManager.TerminateSession, so the
// next call of that client fails with NotAuthenticated as after an idle timeout.
func (h *harness) terminate(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	h.asAdmin(w, r, func(ctx context.Context, c *govmomi.Client) (interface{}, error) {
		h.counter.mu.Lock()
		var ids []string
		for id := range h.counter.sessions {
			ids = append(ids, id)
		}
		h.counter.mu.Unlock()
		sort.Strings(ids)

		manager := session.NewManager(c.Client)
		terminated := []string{}
		for _, id := range ids {
			// One at a time: a session already logged out answers NotFound and would stop the rest.
			if err := manager.TerminateSession(ctx, []string{id}); err == nil {
				terminated = append(terminated, id)
			}
			h.accounts.loggedOut(id)
		}
		return map[string]int{"terminated": len(terminated)}, nil
	})
}

// readJSON decodes a control request's body, answering 400 when it cannot.
func readJSON(w http.ResponseWriter, r *http.Request, value interface{}) bool {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return false
	}
	if err := json.NewDecoder(r.Body).Decode(value); err != nil {
		reply(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return false
	}
	return true
}

func (h *harness) addUser(w http.ResponseWriter, r *http.Request) {
	var user struct {
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if !readJSON(w, r, &user) {
		return
	}
	h.accounts.add(user.Name, user.Password)
	reply(w, http.StatusOK, map[string]string{"name": user.Name})
}

// addRole creates a role through the SOAP API, as govc role.create does.
func (h *harness) addRole(w http.ResponseWriter, r *http.Request) {
	var role struct {
		Name       string   `json:"name"`
		Privileges []string `json:"privileges"`
	}
	if !readJSON(w, r, &role) {
		return
	}
	h.asAdmin(w, r, func(ctx context.Context, c *govmomi.Client) (interface{}, error) {
		if _, err := object.NewAuthorizationManager(c.Client).AddRole(ctx, role.Name, role.Privileges); err != nil {
			return nil, err
		}
		return map[string]string{"name": role.Name}, nil
	})
}

// setPermission gives a user a role on the object at an inventory path, keeping the object's
// other permissions (vcsim's SetEntityPermissions replaces them all), as govc permissions.set
// does.
func (h *harness) setPermission(w http.ResponseWriter, r *http.Request) {
	var permission struct {
		Principal string `json:"principal"`
		Role      string `json:"role"`
		Path      string `json:"path"`
		Propagate bool   `json:"propagate"`
	}
	if !readJSON(w, r, &permission) {
		return
	}
	h.asAdmin(w, r, func(ctx context.Context, c *govmomi.Client) (interface{}, error) {
		entity := c.ServiceContent.RootFolder
		if permission.Path != "/" {
			found, err := object.NewSearchIndex(c.Client).FindByInventoryPath(ctx, permission.Path)
			if err != nil || found == nil {
				return nil, fmt.Errorf("no object at %q: %v", permission.Path, err)
			}
			entity = found.Reference()
		}
		var id int32
		known := false
		authorization := h.counter.authorization
		simulator.Map.WithLock(authorization.Reference(), func() {
			id, known = authorization.roleID(permission.Role)
		})
		if !known {
			return nil, fmt.Errorf("no role %q", permission.Role)
		}
		if err := addPermission(ctx, c, entity, types.Permission{
			Principal: permission.Principal,
			RoleId:    id,
			Propagate: permission.Propagate,
		}); err != nil {
			return nil, err
		}
		return map[string]string{"entity": entity.Value}, nil
	})
}

// addPermission sets one principal's permission on entity, keeping the others.
func addPermission(ctx context.Context, c *govmomi.Client, entity types.ManagedObjectReference, permission types.Permission) error {
	manager := object.NewAuthorizationManager(c.Client)
	existing, err := manager.RetrieveEntityPermissions(ctx, entity, false)
	if err != nil {
		return err
	}
	permission.Entity = &entity
	permissions := []types.Permission{permission}
	for _, p := range existing {
		if p.Group || !strings.EqualFold(p.Principal, permission.Principal) {
			permissions = append(permissions, p)
		}
	}
	return manager.SetEntityPermissions(ctx, entity, permissions)
}

// grantAdmin gives the harness's user the Admin role on the root folder, propagated, as
// vCenter's administrator holds it.
func grantAdmin(ctx context.Context, c *govmomi.Client, user string) error {
	return addPermission(ctx, c, c.ServiceContent.RootFolder, types.Permission{
		Principal: user,
		RoleId:    -1, // Admin
		Propagate: true,
	})
}

func (h *harness) failNextPage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if h.counter.pager == nil {
		fail(w, fmt.Errorf("the simulator does not page (no -page-size)"))
		return
	}
	h.counter.pager.mu.Lock()
	h.counter.pager.failNext = true
	h.counter.pager.mu.Unlock()
	reply(w, http.StatusOK, map[string]bool{"failNext": true})
}
