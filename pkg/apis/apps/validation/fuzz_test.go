package validation

import (
	"encoding/json"
	"testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// FuzzValidate runs every kind's validation on any object a client could send: JSON decoded
// into the wire type, defaulted and converted as the server does, then validated as created,
// as updated from itself and from a valid object, and as a status update. Validation returns
// errors, never panics (a panic would be a 500 to the client).
func FuzzValidate(f *testing.F) {
	f.Add(uint8(0), []byte(`{"metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"main","image":"app:1"}]}},"updateStrategy":{"type":"InPlaceIfPossible","partition":"50%","maxUnavailable":"20%","maxSurge":1,"priorityStrategy":{"weightPriority":[{"weight":50,"matchSelector":{"matchLabels":{"a":"b"}}}]}},"lifecycle":{"preDelete":{"finalizersHandler":["example.com/hook"]}}}}`))
	f.Add(uint8(1), []byte(`{"metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"web"}},"namespaceSelector":{"matchExpressions":[{"key":"a","operator":"In","values":["b"]}]},"containers":[{"name":"agent","image":"agent:1","podInjectPolicy":"AfterAppContainer","upgradeStrategy":{"upgradeType":"HotUpgrade","hotUpgradeEmptyImage":"empty:1"}}],"updateStrategy":{"type":"RollingUpdate","partition":"10%","maxUnavailable":1,"scatterStrategy":[{"key":"zone","value":"a"}]},"injectionStrategy":{"revision":{"revisionName":"r","policy":"Partial"}}}}`))
	f.Add(uint8(2), []byte(`{"metadata":{"name":"crr"},"spec":{"podName":"web","containers":[{"name":"main","preStop":{"exec":{"command":["sleep","1"]}}}],"strategy":{"failurePolicy":"Ignore","orderedRecreate":true,"unreadyGracePeriodSeconds":3,"minStartedSeconds":2},"activeDeadlineSeconds":60,"ttlSecondsAfterFinished":5}}`))
	f.Add(uint8(0), []byte(`{"spec":{"updateStrategy":{"partition":"-5%","maxUnavailable":"abc%"},"scaleStrategy":{"maxUnavailable":"200%"}}}`))
	f.Add(uint8(1), []byte(`{"spec":{"containers":[{"name":""}],"updateStrategy":{"partition":"x"}}}`))

	validClone, validSidecar, validCRR := &apps.CloneSet{}, &apps.SidecarSet{}, &apps.ContainerRecreateRequest{}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		switch kind % 3 {
		case 0:
			var in v1alpha1.CloneSet
			if json.Unmarshal(body, &in) != nil {
				return
			}
			v1alpha1.SetObjectDefaults_CloneSet(&in)
			obj := &apps.CloneSet{}
			if v1alpha1.Convert_v1alpha1_CloneSet_To_apps_CloneSet(&in, obj, nil) != nil {
				return
			}
			_ = ValidateCloneSet(obj)
			_ = ValidateCloneSetUpdate(obj, obj.DeepCopy())
			_ = ValidateCloneSetUpdate(obj, validClone)
			_ = ValidateCloneSetStatusUpdate(obj, obj.DeepCopy())
		case 1:
			var in v1alpha1.SidecarSet
			if json.Unmarshal(body, &in) != nil {
				return
			}
			v1alpha1.SetObjectDefaults_SidecarSet(&in)
			obj := &apps.SidecarSet{}
			if v1alpha1.Convert_v1alpha1_SidecarSet_To_apps_SidecarSet(&in, obj, nil) != nil {
				return
			}
			_ = ValidateSidecarSet(obj)
			_ = ValidateSidecarSetUpdate(obj, obj.DeepCopy())
			_ = ValidateSidecarSetUpdate(obj, validSidecar)
			_ = ValidateSidecarSetStatusUpdate(obj, obj.DeepCopy())
		default:
			var in v1alpha1.ContainerRecreateRequest
			if json.Unmarshal(body, &in) != nil {
				return
			}
			v1alpha1.SetObjectDefaults_ContainerRecreateRequest(&in)
			obj := &apps.ContainerRecreateRequest{}
			if v1alpha1.Convert_v1alpha1_ContainerRecreateRequest_To_apps_ContainerRecreateRequest(&in, obj, nil) != nil {
				return
			}
			_ = ValidateContainerRecreateRequest(obj)
			_ = ValidateContainerRecreateRequestUpdate(obj, obj.DeepCopy())
			_ = ValidateContainerRecreateRequestUpdate(obj, validCRR)
			_ = ValidateContainerRecreateRequestStatusUpdate(obj, obj.DeepCopy())
		}
	})
}
