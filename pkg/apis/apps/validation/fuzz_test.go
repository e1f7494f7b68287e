package validation

import (
	"encoding/json"
	"testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
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

	f.Add(uint8(3), []byte(`{"metadata":{"name":"db"},"spec":{"replicas":4,"selector":{"matchLabels":{"app":"db"}},"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"main","image":"db:1"}]}},"podManagementPolicy":"Parallel","updateStrategy":{"rollingUpdate":{"partition":2,"maxUnavailable":"50%","podUpdatePolicy":"InPlaceIfPossible","unorderedUpdate":{"priorityStrategy":{"orderPriority":[{"orderedKey":"rank"}]}}}},"reserveOrdinals":[1,"3-5"],"ordinals":{"start":1}}}`))
	f.Add(uint8(4), []byte(`{"metadata":{"name":"db","annotations":{"inplace.dev/v1beta1-fields":"{\"reserveOrdinals\":[\"2-1\"],\"ordinals\":{\"start\":-3}}"}},"spec":{"selector":{"matchLabels":{"app":"db"}},"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"main","image":"db:1"}]}}}}`))
	f.Add(uint8(5), []byte(`{"metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"main","image":"agent:1"}]}},"updateStrategy":{"rollingUpdate":{"rollingUpdateType":"Surging","partition":"30%","selector":{"matchLabels":{"canary":"true"}}}},"burstReplicas":"10%"}}`))

	f.Add(uint8(6), []byte(`{"metadata":{"name":"pull"},"spec":{"image":"nginx:1.27","pullSecrets":["regcred"],"selector":{"names":["node-1"]},"parallelism":"2","pullPolicy":{"timeoutSeconds":60},"completionPolicy":{"type":"Always","activeDeadlineSeconds":600,"ttlSecondsAfterFinished":0},"imagePullPolicy":"Always"}}`))
	f.Add(uint8(7), []byte(`{"metadata":{"name":"pulls"},"spec":{"images":["nginx","busybox@sha256:abc"],"podSelector":{"matchLabels":{"app":"web"}},"parallelism":"50%","completionPolicy":{"type":"Never","ttlSecondsAfterFinished":5}}}`))
	f.Add(uint8(8), []byte(`{"metadata":{"name":"node-1"},"spec":{"images":{"nginx":{"tags":[{"tag":"1.27","pullPolicy":{"ttlSecondsAfterFinished":300}},{"tag":"sha256:zz"}]}}},"status":{"imageStatuses":{"nginx":{"tags":[{"tag":"1.27","phase":"Pulling","progress":140}]}}}}`))

	validClone, validSidecar, validCRR := &apps.CloneSet{}, &apps.SidecarSet{}, &apps.ContainerRecreateRequest{}
	validSTS, validDS := &apps.StatefulSet{}, &apps.DaemonSet{}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		switch kind % 9 {
		case 6:
			var in v1alpha1.ImagePullJob
			if json.Unmarshal(body, &in) != nil {
				return
			}
			v1alpha1.SetObjectDefaults_ImagePullJob(&in)
			obj := &apps.ImagePullJob{}
			if v1alpha1.Convert_v1alpha1_ImagePullJob_To_apps_ImagePullJob(&in, obj, nil) != nil {
				return
			}
			_ = ValidateImagePullJob(obj)
			_ = ValidateImagePullJobUpdate(obj, obj.DeepCopy())
			_ = ValidateImagePullJobUpdate(obj, &apps.ImagePullJob{})
			_ = ValidateImagePullJobStatusUpdate(obj, obj.DeepCopy())
		case 7:
			var in v1alpha1.ImageListPullJob
			if json.Unmarshal(body, &in) != nil {
				return
			}
			v1alpha1.SetObjectDefaults_ImageListPullJob(&in)
			obj := &apps.ImageListPullJob{}
			if v1alpha1.Convert_v1alpha1_ImageListPullJob_To_apps_ImageListPullJob(&in, obj, nil) != nil {
				return
			}
			_ = ValidateImageListPullJob(obj)
			_ = ValidateImageListPullJobUpdate(obj, obj.DeepCopy())
			_ = ValidateImageListPullJobStatusUpdate(obj, obj.DeepCopy())
		case 8:
			var in v1alpha1.NodeImage
			if json.Unmarshal(body, &in) != nil {
				return
			}
			v1alpha1.SetObjectDefaults_NodeImage(&in)
			obj := &apps.NodeImage{}
			if v1alpha1.Convert_v1alpha1_NodeImage_To_apps_NodeImage(&in, obj, nil) != nil {
				return
			}
			_ = ValidateNodeImage(obj)
			_ = ValidateNodeImageUpdate(obj, obj.DeepCopy())
			_ = ValidateNodeImageStatusUpdate(obj, obj.DeepCopy())
		case 3:
			var in v1beta1.StatefulSet
			if json.Unmarshal(body, &in) != nil {
				return
			}
			v1beta1.SetObjectDefaults_StatefulSet(&in)
			obj := &apps.StatefulSet{}
			if v1beta1.Convert_v1beta1_StatefulSet_To_apps_StatefulSet(&in, obj, nil) != nil {
				return
			}
			validateStatefulSetAllWays(obj, validSTS)
		case 4:
			var in v1alpha1.StatefulSet
			if json.Unmarshal(body, &in) != nil {
				return
			}
			v1alpha1.SetObjectDefaults_StatefulSet(&in)
			obj := &apps.StatefulSet{}
			if v1alpha1.Convert_v1alpha1_StatefulSet_To_apps_StatefulSet(&in, obj, nil) != nil {
				return
			}
			validateStatefulSetAllWays(obj, validSTS)
		case 5:
			var in v1alpha1.DaemonSet
			if json.Unmarshal(body, &in) != nil {
				return
			}
			v1alpha1.SetObjectDefaults_DaemonSet(&in)
			obj := &apps.DaemonSet{}
			if v1alpha1.Convert_v1alpha1_DaemonSet_To_apps_DaemonSet(&in, obj, nil) != nil {
				return
			}
			_ = ValidateDaemonSet(obj)
			_ = ValidateDaemonSetUpdate(obj, obj.DeepCopy())
			_ = ValidateDaemonSetUpdate(obj, validDS)
			_ = ValidateDaemonSetStatusUpdate(obj, obj.DeepCopy())
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

func validateStatefulSetAllWays(obj, valid *apps.StatefulSet) {
	_ = ValidateStatefulSet(obj)
	_ = ValidateStatefulSetUpdate(obj, obj.DeepCopy())
	_ = ValidateStatefulSetUpdate(obj, valid)
	_ = ValidateStatefulSetStatusUpdate(obj, obj.DeepCopy())
}
