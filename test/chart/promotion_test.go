// Copyright 2026 The KubeStellar Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package chart

import (
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestSpaceChartShipsPromotions renders the space chart: the promoters'
// role and the promotion admission policy as config/approval ships them;
// promoters bound only when named; no admission policy of promotions with
// promotion.admissionPolicy=false (nor with approval.admissionPolicy=false,
// which TestSpaceChartShipsWhatConfigShips checks: a cluster without
// admission policies).
func TestSpaceChartShipsPromotions(t *testing.T) {
	rendered := objects(t, helm(t, "template", "space", spaceChart, "--set", "subjects[0].kind=User,subjects[0].name=stager"))
	for _, w := range configObjects(t, "approval", "promoter_role.yaml", "promotion_policy.yaml") {
		got := find(t, rendered, w.GetKind(), w.GetName())
		if !reflect.DeepEqual(got.Object["spec"], w.Object["spec"]) || !reflect.DeepEqual(got.Object["rules"], w.Object["rules"]) {
			t.Errorf("the space chart's %s %s differs from config/approval's", w.GetKind(), w.GetName())
		}
	}
	for _, o := range rendered {
		if o.GetKind() == "ClusterRoleBinding" && o.GetName() == "workload-stager-promoter" {
			t.Error("promoters bound though none was named")
		}
	}
	named := objects(t, helm(t, "template", "space", spaceChart, "--set", "promotion.admissionPolicy=false",
		"--set", "subjects[0].kind=User,subjects[0].name=stager,promotion.promoters[0].kind=Group,promotion.promoters[0].name=release-managers"))
	binding := into[rbacv1.ClusterRoleBinding](t, find(t, named, "ClusterRoleBinding", "workload-stager-promoter"))
	if want := []rbacv1.Subject{{Kind: "Group", Name: "release-managers"}}; !reflect.DeepEqual(binding.Subjects, want) {
		t.Errorf("the promoters' binding's subjects are %v, want %v", binding.Subjects, want)
	}
	for _, o := range named {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") && strings.Contains(o.GetName(), "promotion") {
			t.Errorf("%s %s rendered with promotion.admissionPolicy=false", o.GetKind(), o.GetName())
		}
	}
}
