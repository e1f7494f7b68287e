package pub

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// UpdatePriorityStrategy orders Pods for update: either by weights of label selectors or by the
// values of ordered label keys. Only one of the two may be set.
type UpdatePriorityStrategy struct {
	// OrderPriority updates Pods with the larger integer value of the first key first.
	OrderPriority []UpdatePriorityOrderTerm `json:"orderPriority,omitempty" protobuf:"bytes,1,rep,name=orderPriority"`
	// WeightPriority updates Pods matching the heavier selectors first.
	WeightPriority []UpdatePriorityWeightTerm `json:"weightPriority,omitempty" protobuf:"bytes,2,rep,name=weightPriority"`
}

// UpdatePriorityOrderTerm names a label whose integer value orders Pods.
type UpdatePriorityOrderTerm struct {
	OrderedKey string `json:"orderedKey" protobuf:"bytes,1,opt,name=orderedKey"`
}

// UpdatePriorityWeightTerm gives a weight (1-100) to the Pods a selector matches.
type UpdatePriorityWeightTerm struct {
	Weight        int32                `json:"weight" protobuf:"varint,1,opt,name=weight"`
	MatchSelector metav1.LabelSelector `json:"matchSelector" protobuf:"bytes,2,opt,name=matchSelector"`
}

// UpdateScatterStrategy spreads the Pods matching each term evenly over the update order.
type UpdateScatterStrategy []UpdateScatterTerm

// UpdateScatterTerm is one label key and value whose Pods are scattered.
type UpdateScatterTerm struct {
	Key   string `json:"key" protobuf:"bytes,1,opt,name=key"`
	Value string `json:"value" protobuf:"bytes,2,opt,name=value"`
}
