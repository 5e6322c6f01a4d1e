package main

// Users, roles and permissions, as vCenter has them and vcsim 0.24.2 does not.
//
// vcsim 0.24.2 stores roles (AddAuthorizationRole) and permissions (SetEntityPermissions) but
// never consults them: Service.call (simulator/simulator.go) checks only that a session exists
// (NotAuthenticated otherwise), HasPrivilegeOnEntities answers isGranted=true for every
// privilege (simulator/authorization_manager.go), and SessionManager.Login accepts one
// user/password pair, or any non-empty pair (simulator/session_manager.go, validLogin).
//
// The harness adds what the tests need from a real vCenter, and no more:
//   - a table of users and passwords that Login enforces (InvalidLogin otherwise);
//   - HasPrivilegeOnEntities answered from the stored roles and permissions, for the session
//     it names, refusing (NoPermission, System.Read) an entity the caller cannot read;
//   - ReconfigureComputeResource_Task refused (NoPermission, Host.Inventory.EditCluster) to a
//     session that lacks that privilege on the cluster;
//   - RetrievePropertiesEx leaving out every managed entity (folder, datacenter, cluster, host,
//     VM...) the session's user cannot read (System.Read), wherever the retrieval reached it:
//     through a container view, a traversal or by name. src/vsphere/privileges.txt says how
//     vCenter answers: an object without System.Read is left out. Objects that are not
//     entities (views, tasks, the service's singletons) are returned as vcsim returns them.
//
// A permission applies to its entity and, when it propagates, to the entities below it (by
// `parent`); the nearest permission for the user wins, as in vCenter. A VM has two parents, as
// in vCenter: its folder and its resource pool (so its cluster); without a permission of its
// own it holds what either parent passes down. Group permissions and privilege checks of any
// other method are not modelled.

import (
	"strings"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// accounts are the users Login accepts, and who each live session belongs to.
type accounts struct {
	mu        sync.Mutex
	passwords map[string]string
	// sessions maps a session key (vcsim's cookie value) to its user.
	sessions map[string]string
}

func newAccounts() *accounts {
	return &accounts{passwords: map[string]string{}, sessions: map[string]string{}}
}

func (a *accounts) add(user, password string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.passwords[user] = password
}

func (a *accounts) valid(user, password string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	expected, ok := a.passwords[user]
	return ok && password != "" && expected == password
}

func (a *accounts) loggedIn(key, user string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions[key] = user
}

func (a *accounts) loggedOut(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, key)
}

func (a *accounts) user(key string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	user, ok := a.sessions[key]
	return user, ok
}

// authorizationManager is vcsim's, answering privilege queries from its permissions. Embedded by
// value: the property collector finds the managed object type by following first fields, and
// cannot follow a pointer.
type authorizationManager struct {
	simulator.AuthorizationManager
	accounts *accounts
}

// installAuthorization replaces vcsim's authorization manager (ref) with one that checks.
func installAuthorization(ref types.ManagedObjectReference, accounts *accounts) *authorizationManager {
	base := simulator.Map.Get(ref).(*simulator.AuthorizationManager)
	am := &authorizationManager{AuthorizationManager: *base, accounts: accounts}
	simulator.Map.Put(am)
	return am
}

// role is the role a permission names.
func (m *authorizationManager) role(id int32) (types.AuthorizationRole, bool) {
	for _, role := range m.RoleList {
		if role.RoleId == id {
			return role, true
		}
	}
	return types.AuthorizationRole{}, false
}

// roleID is the id of the role of that name.
func (m *authorizationManager) roleID(name string) (int32, bool) {
	for _, role := range m.RoleList {
		if role.Name == name {
			return role.RoleId, true
		}
	}
	return 0, false
}

// permissionsOn are the permissions defined on the entity itself.
func (m *authorizationManager) permissionsOn(entity types.ManagedObjectReference) []types.Permission {
	body := m.RetrieveEntityPermissions(&types.RetrieveEntityPermissions{Entity: entity})
	return body.(*methods.RetrieveEntityPermissionsBody).Res.Returnval
}

// holds says whether user holds privilege on entity: the role of the nearest permission for the
// user, on the entity or propagated from an ancestor (for a VM, from either of its parents). The
// caller holds the manager's lock.
func (m *authorizationManager) holds(user string, entity types.ManagedObjectReference, privilege string) bool {
	if own, ok := m.permissionAt(user, entity, false); ok {
		return m.grants(own, privilege)
	}
	for _, parent := range parents(entity) {
		if inherited, ok := m.nearest(user, parent); ok && m.grants(inherited, privilege) {
			return true
		}
	}
	return false
}

// reads says whether user may read entity (System.Read); objects that are not managed entities
// carry no permissions and are readable by every session. The caller holds the manager's lock.
func (m *authorizationManager) reads(user string, ref types.ManagedObjectReference) bool {
	if _, entity := simulator.Map.Get(ref).(mo.Entity); !entity {
		return true
	}
	return m.holds(user, ref, "System.Read")
}

// permissionAt is the user's permission defined on entity itself, if any; when inherited, only
// one that propagates to the entities below counts.
func (m *authorizationManager) permissionAt(user string, entity types.ManagedObjectReference, inherited bool) (types.Permission, bool) {
	if _, ok := simulator.Map.Get(entity).(mo.Entity); !ok {
		return types.Permission{}, false
	}
	for _, permission := range m.permissionsOn(entity) {
		if permission.Group || !strings.EqualFold(permission.Principal, user) {
			continue
		}
		if inherited && !permission.Propagate {
			continue
		}
		return permission, true
	}
	return types.Permission{}, false
}

// nearest is the permission that entity passes down to its children: its own propagating one,
// or the nearest propagating one above it.
func (m *authorizationManager) nearest(user string, entity types.ManagedObjectReference) (types.Permission, bool) {
	ref := entity
	for depth := 0; depth < 64; depth++ {
		if permission, ok := m.permissionAt(user, ref, true); ok {
			return permission, true
		}
		object, ok := simulator.Map.Get(ref).(mo.Entity)
		if !ok || object.Entity().Parent == nil {
			break
		}
		ref = *object.Entity().Parent
	}
	return types.Permission{}, false
}

// grants says whether the role of permission holds privilege (an unknown role holds none).
func (m *authorizationManager) grants(permission types.Permission, privilege string) bool {
	role, ok := m.role(permission.RoleId)
	if !ok {
		return false
	}
	for _, id := range role.Privilege {
		if id == privilege {
			return true
		}
	}
	return false
}

// parents are the entities an entity inherits permissions from: its parent, and for a VM also
// its resource pool.
func parents(entity types.ManagedObjectReference) []types.ManagedObjectReference {
	var found []types.ManagedObjectReference
	object, ok := simulator.Map.Get(entity).(mo.Entity)
	if !ok {
		return nil
	}
	if parent := object.Entity().Parent; parent != nil {
		found = append(found, *parent)
	}
	if vm, ok := object.(*simulator.VirtualMachine); ok && vm.ResourcePool != nil {
		found = append(found, *vm.ResourcePool)
	}
	return found
}

// HasPrivilegeOnEntities answers for the session the request names (all false for a session
// that does not exist, as vCenter does), after checking that the caller may read each entity.
func (m *authorizationManager) HasPrivilegeOnEntities(ctx *simulator.Context, req *types.HasPrivilegeOnEntities) soap.HasFault {
	body := &methods.HasPrivilegeOnEntitiesBody{}
	caller := ""
	if ctx.Session != nil {
		caller = ctx.Session.UserName
	}
	for _, entity := range req.Entity {
		if !m.holds(caller, entity, "System.Read") {
			body.Fault_ = simulator.Fault(permissionDenied, &types.NoPermission{Object: entity, PrivilegeId: "System.Read"})
			return body
		}
	}
	user, known := m.accounts.user(req.SessionId)
	var answers []types.EntityPrivilege
	for _, entity := range req.Entity {
		answer := types.EntityPrivilege{Entity: entity}
		for _, id := range req.PrivId {
			answer.PrivAvailability = append(answer.PrivAvailability, types.PrivilegeAvailability{
				PrivId:    id,
				IsGranted: known && m.holds(user, entity, id),
			})
		}
		answers = append(answers, answer)
	}
	body.Res = &types.HasPrivilegeOnEntitiesResponse{Returnval: answers}
	return body
}

// permissionDenied is vCenter's message for NoPermission.
const permissionDenied = "Permission to perform this operation was denied."
